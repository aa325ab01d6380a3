import type { ServerType } from '@hono/node-server';
import { startHttpServer, type HttpServerLimits } from '../http/server.js';
import { yieldToLoop } from '../lib/yieldToLoop.js';
import type { Service } from './service.js';

/**
 * Opens the service's port once requests can be answered: the service is built (migrations run,
 * the embedded chain restored) and its health report made, then the port is bound, then one turn
 * of the event loop passes before the caller goes on (creates the development key, starts the
 * workers), so a connection accepted at once is answered before any start-up work runs
 * (docs/architecture.md, Start and stop). Rejects with the bind error (EADDRINUSE, …).
 */
export async function serveService(service: Service, options: { port: number; hostname: string; limits: HttpServerLimits }): Promise<{ server: ServerType; port: number }> {
  await service.warmUp();
  const listening = await startHttpServer({ fetch: service.app.fetch, fastPath: service.fastPath, port: options.port, hostname: options.hostname, limits: options.limits });
  await yieldToLoop();
  return listening;
}
