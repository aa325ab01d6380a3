/**
 * A stand-in for a test worker: starts `npm run chain` and the whole service the way the tests do
 * (test/chain/support/chainProcess.ts, test/reliability/support/childService.ts), prints their pids as
 * one JSON line and waits to be killed. argv[2]: a data directory of its own.
 */
import { join } from 'node:path';
import { startChainProcess } from '../../chain/support/chainProcess.js';
import { startChildService } from '../../reliability/support/childService.js';

const dir = process.argv[2] ?? '';
const chain = await startChainProcess({ DATA_DIR: join(dir, 'chain') });
const service = await startChildService({ DATA_DIR: join(dir, 'service'), NODE_ENV: 'test', LOG_LEVEL: 'silent', SECRET_KEY: Buffer.alloc(32, 7).toString('base64') });
process.stdout.write(`${JSON.stringify({ chain: chain.child.pid, service: service.child.pid })}\n`);
setInterval(() => undefined, 60_000);
