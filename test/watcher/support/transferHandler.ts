import bs58 from 'bs58';
import type { WatchHandler } from '../../../src/watcher/watcher.js';

const SYSTEM_PROGRAM = '11111111111111111111111111111111';

/**
 * A watch kind for tests that need no extra programs: every system transfer INTO the watched
 * address is one `test.transfer_received` event, keyed on (signature, instruction index).
 */
export const transferHandler: WatchHandler = {
  async process(watch, transactions) {
    const events = [];
    for (const tx of transactions) {
      for (const [index, ix] of tx.instructions.entries()) {
        if (ix.programId !== SYSTEM_PROGRAM || ix.data.length !== 12 || Buffer.from(ix.data).readUInt32LE(0) !== 2) continue;
        if (ix.accounts[1] !== watch.address) continue;
        const lamports = Buffer.from(ix.data).readBigUInt64LE(4).toString();
        events.push({ event: 'test.transfer_received', signature: tx.signature, instructionIndex: index, data: { from: ix.accounts[0], to: watch.address, lamports, signature: tx.signature, signatureId: bs58.decode(tx.signature).length } });
      }
    }
    return { events };
  },
};
