import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection, PublicKey } from '@solana/web3.js';
import type { Logger } from '../../lib/logger.js';

const UPGRADEABLE_LOADER = new PublicKey('BPFLoaderUpgradeab1e11111111111111111111111');
/** Programdata header: enum tag u32 (3), slot u64, Option<authority> (1 + 32). */
const PROGRAMDATA_HEADER = 45;
const ELF_MAGIC = [0x7f, 0x45, 0x4c, 0x46];

/**
 * Fetches the executable of an upgradeable program from another cluster, as
 * `solana-test-validator --clone-upgradeable-program` does: the program account (owned by the
 * upgradeable loader, tag 2) names its programdata account, which must be the loader's PDA of the
 * program id and hold an ELF after its 45-byte header. Returns the ELF bytes.
 */
export async function fetchUpgradeableProgram(connection: Connection, programId: PublicKey): Promise<Buffer> {
  const program = await connection.getAccountInfo(programId, 'confirmed');
  if (!program) throw new Error(`program ${programId.toBase58()} not found on the source cluster`);
  if (!program.owner.equals(UPGRADEABLE_LOADER) || !program.executable || program.data.length < 36 || program.data.readUInt32LE(0) !== 2) {
    throw new Error(`${programId.toBase58()} is not an upgradeable program on the source cluster`);
  }
  const programData = new PublicKey(program.data.subarray(4, 36));
  const [expected] = PublicKey.findProgramAddressSync([programId.toBuffer()], UPGRADEABLE_LOADER);
  if (!programData.equals(expected)) throw new Error(`${programId.toBase58()} names a foreign programdata account`);
  const data = await connection.getAccountInfo(programData, 'confirmed');
  if (!data || !data.owner.equals(UPGRADEABLE_LOADER) || data.data.length <= PROGRAMDATA_HEADER || data.data.readUInt32LE(0) !== 3) {
    throw new Error(`programdata of ${programId.toBase58()} is missing or malformed on the source cluster`);
  }
  const elf = data.data.subarray(PROGRAMDATA_HEADER);
  if (!ELF_MAGIC.every((b, i) => elf[i] === b)) throw new Error(`programdata of ${programId.toBase58()} holds no ELF`);
  return Buffer.from(elf);
}

/**
 * CHAIN_CLONE_FROM: the programs among `programIds` that are not loaded locally, fetched from
 * `sourceUrl` once and cached as `<cacheDir>/<programId>.so`. Returns the cached files to load.
 */
export async function cloneMissingPrograms(options: {
  sourceUrl: string;
  programIds: string[];
  loaded: string[];
  cacheDir: string;
  logger: Logger;
}): Promise<Array<{ programId: string; path: string }>> {
  const missing = options.programIds.filter((id) => !options.loaded.includes(id));
  if (missing.length === 0) return [];
  mkdirSync(options.cacheDir, { recursive: true });
  const connection = new Connection(options.sourceUrl, 'confirmed');
  const files: Array<{ programId: string; path: string }> = [];
  for (const programId of missing) {
    const path = join(options.cacheDir, `${programId}.so`);
    if (!existsSync(path)) {
      const elf = await fetchUpgradeableProgram(connection, new PublicKey(programId));
      writeFileSync(`${path}.tmp`, elf);
      renameSync(`${path}.tmp`, path);
      options.logger.info({ programId, bytes: elf.length, source: options.sourceUrl }, 'program cloned');
    }
    files.push({ programId, path });
  }
  return files;
}
