/**
 * The chain thread's entry (started by `startChainThread` in serviceChain.ts): the embedded chain on
 * a second connection to the service's SQLite file, and the launch steps' executors, served to the
 * main thread through `chain/embedded/thread/host.ts`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pino } from 'pino';
import type { EmbeddedBackend } from '../chain/embedded/backend.js';
import { ChainThreadHost } from '../chain/embedded/thread/host.js';
import type { PendingTx, StepName } from '../chain/steps/types.js';
import { openDatabase } from '../db/database.js';
import { holdWriteLock } from '../db/writeLock.js';
import { createChainStepRunner } from '../launches/chainStepRunner.js';
import { systemClock } from '../lib/clock.js';
import { redactPaths } from '../lib/logger.js';
import { createChainBackend, stepExecutorsFor, type ChainThreadData } from './serviceChain.js';

const data = workerData as ChainThreadData;
if (!parentPort) throw new Error('chainThread.ts runs as a worker thread (startChainThread)');
const host = new ChainThreadHost(parentPort);

async function start(): Promise<void> {
  // Lines go to the main thread's logger, which formats, redacts again and writes them.
  const logger = pino({ level: data.logLevel, base: undefined, redact: { paths: redactPaths, censor: '[redacted]' } }, { write: (line: string) => host.log(line) });
  // A second connection to the service's file: the main thread's migrates and checkpoints it.
  const database = openDatabase(data.databasePath, { backgroundCheckpoint: false, autoCheckpoint: false });
  const secretKey = Buffer.from(data.config.secretKey);
  const config = { ...data.config, secretKey };
  const chain = (await createChainBackend(config, { db: database.db, clock: systemClock, logger, writeGate: (write) => holdWriteLock(data.writeLock, write) })) as EmbeddedBackend;
  const runStep = createChainStepRunner({ chain, secretKey, executors: stepExecutorsFor() });
  host.serve(chain, {
    info: { payerSecretKey: chain.payer.secretKey, loadedPrograms: chain.loadedPrograms, genesisHash: chain.genesisHash, timelineOrigin: chain.timelineOrigin, floorHeight: chain.now().blockHeight },
    runStep: (input, recordPending) =>
      runStep({
        launchId: input.launchId,
        step: input.step as StepName,
        request: input.request,
        results: input.results,
        pending: input.pending as Record<string, PendingTx>,
        payerSeed: input.payerSeed,
        budgetLamports: input.budgetLamports,
        signing: input.signing,
        recordPending: (label, tx) => recordPending(label, tx),
        logger: logger.child(input.logBindings),
      }),
    async close() {
      await chain.close();
      await database.close();
    },
  });
}

start().catch((error: unknown) => host.failed(error));
