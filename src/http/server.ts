import { getRequestListener, type Http2Bindings, type HttpBindings, type ServerType } from '@hono/node-server';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { processLoopBudget, type LoopBudget } from '../lib/loopBudget.js';
import type { RequestFastPath } from './healthFastPath.js';
import type { TrustProxy } from './clientAddress.js';

export interface HttpServerLimits {
  /** Bound on receiving one request, headers and body (Node's default is 300 s). */
  requestTimeoutMs: number;
  /** Open connections one client address may hold; 0 turns the cap off. */
  maxConnectionsPerClient: number;
  /**
   * TRUST_PROXY: a trusted proxy's connections carry many callers, so they are not capped here; the
   * event stream caps each forwarded caller's open streams instead (docs/configuration.md).
   */
  trustProxy?: TrustProxy;
}

export interface HttpServerOptions {
  /** Hono's `app.fetch`; `env` carries the node request and response (the client's address). */
  fetch: (request: Request, env: HttpBindings | Http2Bindings) => Response | Promise<Response>;
  /** Runs first on every request, before a `Request` is built (the service's healthFastPath). */
  fastPath?: RequestFastPath;
  port: number;
  hostname: string;
  limits: HttpServerLimits;
  /** Told of every accepted connection (default: the process's budget, which API requests share). */
  loopBudget?: LoopBudget;
}

const REFUSED_BODY = JSON.stringify({ error: { code: 'rate_limited', message: 'Too many open connections from this address' } });
const REFUSED = [
  'HTTP/1.1 429 Too Many Requests',
  'Content-Type: application/json',
  `Content-Length: ${Buffer.byteLength(REFUSED_BODY)}`,
  'Retry-After: 1',
  'Connection: close',
  '',
  REFUSED_BODY,
].join('\r\n');

/**
 * Serves `fetch` with @hono/node-server, bounded at the socket: a request whose headers and body
 * do not arrive within `requestTimeoutMs` is answered 408 and its socket closed (a body trickled a
 * byte at a time cannot hold a socket for minutes), and one client address cannot hold more than
 * `maxConnectionsPerClient` connections (the next ones are answered 429 and closed at once).
 * A `fastPath` sees each request first and hands the ones it does not answer to `fetch`; every
 * accepted connection is reported to the loop budget ({@link LoopBudget.connectionAccepted}).
 * Resolves once listening.
 */
export function startHttpServer(options: HttpServerOptions): Promise<{ server: ServerType; port: number }> {
  const { requestTimeoutMs, maxConnectionsPerClient } = options.limits;
  const app = getRequestListener(options.fetch, { hostname: options.hostname });
  const fastPath = options.fastPath;
  const server = createServer(
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      // Node checks the two timeouts above on this period (default 30 s, which would let a slow
      // request live up to twice its bound).
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(requestTimeoutMs / 4))),
    },
    fastPath ? (req, res) => fastPath(req, res, () => void app(req, res)) : (req, res) => void app(req, res),
  );
  // libuv accepts one connection per loop iteration: while they arrive, iterations are kept short.
  const budget = options.loopBudget ?? processLoopBudget;
  server.on('connection', () => budget.connectionAccepted());
  if (maxConnectionsPerClient > 0) capConnectionsPerClient(server, maxConnectionsPerClient, options.limits.trustProxy);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.hostname, () => resolve({ server, port: (server.address() as AddressInfo).port }));
  });
}

function capConnectionsPerClient(server: Server, cap: number, trustProxy: TrustProxy | undefined): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    if (trustProxy?.trusts(address)) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > cap) {
      socket.end(REFUSED);
      socket.destroySoon();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
