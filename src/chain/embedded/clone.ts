import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PublicKey } from '@solana/web3.js';
import type { Logger } from '../../lib/logger.js';
import { missingProgramsLine, type FetchFailure } from '../missingPrograms.js';
import { programFileProblem } from './programs.js';

const UPGRADEABLE_LOADER = new PublicKey('BPFLoaderUpgradeab1e11111111111111111111111');
/** Programdata header: enum tag u32 (3), slot u64, Option<authority> (1 + 32). */
const PROGRAMDATA_HEADER = 45;
/** Each request to the source cluster; offline the answer (refused, no route, no DNS) comes sooner. */
const REQUEST_TIMEOUT_MS = 15_000;
/** After a failed fetch, launches asking for the programs are answered at once for this long. */
export const CLONE_RETRY_AFTER_MS = 30_000;

/** A program the embedded chain may fetch: its id and the name the one-line answers use. */
export interface CloneProgram {
  programId: string;
  name: string;
}

/** One account read with `getAccountInfo` (base64), or null when the cluster has none. */
async function readAccount(sourceUrl: string, address: PublicKey, signal?: AbortSignal): Promise<{ owner: PublicKey; executable: boolean; data: Buffer } | null> {
  const res = await fetch(sourceUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getAccountInfo', params: [address.toBase58(), { encoding: 'base64', commitment: 'confirmed' }] }),
    signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]) : AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const body = (await res.json()) as { result?: { value: { owner: string; executable: boolean; data: [string, string] } | null }; error?: { message?: string } };
  if (body.error || !body.result) throw new Error(`getAccountInfo: ${body.error?.message ?? 'no result'}`);
  const value = body.result.value;
  return value ? { owner: new PublicKey(value.owner), executable: value.executable, data: Buffer.from(value.data[0], 'base64') } : null;
}

/**
 * Fetches the executable of an upgradeable program from another cluster, as
 * `solana-test-validator --clone-upgradeable-program` does: the program account (owned by the
 * upgradeable loader, tag 2) names its programdata account, which must be the loader's PDA of the
 * program id and hold an ELF after its 45-byte header. Returns the ELF bytes.
 */
export async function fetchUpgradeableProgram(sourceUrl: string, programId: PublicKey, signal?: AbortSignal): Promise<Buffer> {
  const program = await readAccount(sourceUrl, programId, signal);
  if (!program) throw new Error(`program ${programId.toBase58()} not found on the source cluster`);
  if (!program.owner.equals(UPGRADEABLE_LOADER) || !program.executable || program.data.length < 36 || program.data.readUInt32LE(0) !== 2) {
    throw new Error(`${programId.toBase58()} is not an upgradeable program on the source cluster`);
  }
  const programData = new PublicKey(program.data.subarray(4, 36));
  const [expected] = PublicKey.findProgramAddressSync([programId.toBuffer()], UPGRADEABLE_LOADER);
  if (!programData.equals(expected)) throw new Error(`${programId.toBase58()} names a foreign programdata account`);
  const data = await readAccount(sourceUrl, programData, signal);
  if (!data || !data.owner.equals(UPGRADEABLE_LOADER) || data.data.length <= PROGRAMDATA_HEADER || data.data.readUInt32LE(0) !== 3) {
    throw new Error(`programdata of ${programId.toBase58()} is missing or malformed on the source cluster`);
  }
  const elf = data.data.subarray(PROGRAMDATA_HEADER);
  if (programFileProblem(elf) !== undefined) throw new Error(`programdata of ${programId.toBase58()} holds no ELF`);
  return Buffer.from(elf);
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Writes `bytes` to `path` through a temporary file, so a reader never sees half of it. */
function writeAtomically(path: string, bytes: Uint8Array | string): void {
  writeFileSync(`${path}.tmp`, bytes);
  renameSync(`${path}.tmp`, path);
}

/**
 * The cache: `<cacheDir>/<programId>.so` beside `<programId>.so.sha256`, the digest written after
 * the binary. A binary whose digest is missing or differs (a copy cut short, an edit) or that is no
 * ELF is removed, so it is fetched again.
 */
export const programCache = {
  path: (cacheDir: string, programId: string) => join(cacheDir, `${programId}.so`),

  /** The cached binary's path when it is whole, else undefined (and whatever was there is removed). */
  verified(cacheDir: string, programId: string): string | undefined {
    const path = programCache.path(cacheDir, programId);
    if (!existsSync(path)) return undefined;
    const bytes = readFileSync(path);
    const digest = existsSync(`${path}.sha256`) ? readFileSync(`${path}.sha256`, 'utf8').trim() : undefined;
    if (digest === sha256(bytes) && programFileProblem(bytes) === undefined) return path;
    programCache.remove(cacheDir, programId);
    return undefined;
  },

  write(cacheDir: string, programId: string, elf: Uint8Array): string {
    mkdirSync(cacheDir, { recursive: true });
    const path = programCache.path(cacheDir, programId);
    writeAtomically(path, elf);
    writeAtomically(`${path}.sha256`, `${sha256(elf)}\n`);
    return path;
  },

  remove(cacheDir: string, programId: string): void {
    const path = programCache.path(cacheDir, programId);
    rmSync(path, { force: true });
    rmSync(`${path}.sha256`, { force: true });
  },
};

/** A fetch error in a few words: the socket's code (ECONNREFUSED, ENOTFOUND, …) when there is one. */
function shortCause(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
    if (current.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
    current = current.cause;
  }
  return error instanceof Error ? error.message.split('\n')[0]! : String(error);
}

/** What the cloner needs of the embedded chain. */
export interface ProgramClonerOptions {
  sourceUrl: string;
  programs: CloneProgram[];
  cacheDir: string;
  logger: Logger;
  now: () => number;
  /** Aborted when the chain closes: a fetch under way stops. */
  signal?: AbortSignal;
  isLoaded(programId: string): boolean;
  /** Loads a verified binary into the running chain; throws when the VM refuses it. */
  load(programId: string, path: string): Promise<void>;
}

/** CHAIN_CLONE_FROM: fetches the programs the running chain lacks, in the background or when a launch needs them. */
export interface ProgramCloner {
  /**
   * Fetches (or waits for the fetch under way of) those of `programIds` that are not loaded, caches
   * and loads them. Never throws: a failure is logged as one line and answered for
   * {@link CLONE_RETRY_AFTER_MS} without asking the source again. Resolves with the ids still missing.
   */
  ensure(programIds?: string[]): Promise<string[]>;
  /** The last fetch's failure while it is answered without asking again (undefined after a success). */
  failure(): FetchFailure | undefined;
}

export function createProgramCloner(options: ProgramClonerOptions): ProgramCloner {
  const { logger } = options;
  let inFlight: Promise<void> | undefined;
  let failedAt: number | undefined;
  let lastFailure: FetchFailure | undefined;
  const missing = (ids: string[]) => ids.filter((id) => !options.isLoaded(id));

  const fetchOne = async (program: CloneProgram): Promise<void> => {
    const elf = await fetchUpgradeableProgram(options.sourceUrl, new PublicKey(program.programId), options.signal);
    const path = programCache.write(options.cacheDir, program.programId, elf);
    try {
      await options.load(program.programId, path);
    } catch (error) {
      programCache.remove(options.cacheDir, program.programId);
      throw error;
    }
    logger.info({ programId: program.programId, name: program.name, bytes: elf.length, source: options.sourceUrl }, 'program fetched and loaded');
  };

  const attempt = async (programs: CloneProgram[]): Promise<void> => {
    const outcomes = await Promise.allSettled(programs.map(fetchOne));
    const failed = programs.filter((_, i) => outcomes[i]?.status === 'rejected');
    if (failed.length === 0) {
      failedAt = undefined;
      lastFailure = undefined;
      return;
    }
    failedAt = options.now();
    if (options.signal?.aborted) return;
    const first = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    lastFailure = { sourceUrl: options.sourceUrl, cause: shortCause(first?.reason) };
    logger.warn(missingProgramsLine(failed, lastFailure));
  };

  return {
    failure: () => (failedAt !== undefined && options.now() - failedAt < CLONE_RETRY_AFTER_MS ? lastFailure : undefined),
    async ensure(programIds = options.programs.map((p) => p.programId)) {
      while (inFlight) await inFlight;
      if (missing(programIds).length === 0) return [];
      if (failedAt !== undefined && options.now() - failedAt < CLONE_RETRY_AFTER_MS) return missing(programIds);
      const wanted = options.programs.filter((p) => programIds.includes(p.programId) && !options.isLoaded(p.programId));
      inFlight = attempt(wanted).finally(() => (inFlight = undefined));
      await inFlight;
      return missing(programIds);
    },
  };
}
