import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../lib/logger.js';
import type { EmbeddedBackend } from './backend.js';
import { embeddedRpcMethods, RpcError } from './rpcMethods.js';
import { loopbackOrigin } from './loopbackOrigin.js';
import { createSubscriptions } from './rpcSubscriptions.js';

/** Largest request body accepted (a batch of transactions stays far below it). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

interface RpcRequest {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

/** Answers one parsed JSON-RPC request object (never throws). */
export type RpcHandler = (request: unknown) => Promise<Record<string, unknown>>;

/** The JSON-RPC dispatcher over the embedded chain's methods: result or node-style error. */
export function createRpcHandler(chain: EmbeddedBackend, logger?: Logger): RpcHandler {
  const methods = embeddedRpcMethods(chain);
  return async (raw) => {
    const request = (raw !== null && typeof raw === 'object' ? raw : {}) as RpcRequest;
    const id = typeof request.id === 'string' || typeof request.id === 'number' ? request.id : null;
    const fail = (code: number, message: string, data?: unknown) => ({ jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } });
    if (request.jsonrpc !== '2.0' || typeof request.method !== 'string') return fail(-32600, 'Invalid request');
    const method = Object.hasOwn(methods, request.method) ? methods[request.method] : undefined;
    if (!method) return fail(-32601, 'Method not found');
    const params = request.params === undefined ? [] : request.params;
    if (!Array.isArray(params)) return fail(-32602, 'Invalid params: expected an array');
    try {
      return { jsonrpc: '2.0', id, result: await method(params) };
    } catch (error) {
      if (error instanceof RpcError) return fail(error.code, error.message, error.data);
      logger?.warn({ err: error, method: request.method }, 'embedded RPC method failed');
      return fail(-32603, `Internal error: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    }
  };
}

/** A running JSON-RPC server of the embedded chain. */
export interface ChainRpcServer {
  readonly url: string;
  /** The PubSub (WebSocket) endpoint: the same port; also port + 1 when `port` was fixed, as on a test validator. */
  readonly wsUrl: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves the embedded chain as a local cluster: Solana JSON-RPC over HTTP (POST, single or batch
 * requests). Browsers: pages on loopback origins may call it (CORS names their origin); a request
 * from any other origin is refused, so a page the developer opens cannot airdrop or send. See docs/chain.md.
 */
export async function startChainRpcServer(options: {
  chain: EmbeddedBackend;
  host: string;
  port: number;
  logger: Logger;
  /** Pending signature subscriptions per connection and in all (default 256 and 2 048, docs/chain.md). */
  subscriptionLimits?: { perConnection: number; total: number };
}): Promise<ChainRpcServer> {
  const logger = options.logger.child({ component: 'chain-rpc' });
  const handle = createRpcHandler(options.chain, logger);
  const corsHeaders = (req: IncomingMessage): Record<string, string> => (req.headers.origin === undefined ? {} : { 'access-control-allow-origin': req.headers.origin, vary: 'Origin' });
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', ...corsHeaders(res.req) });
    res.end(JSON.stringify(body));
  };
  const onRequest = async (req: IncomingMessage, res: ServerResponse) => {
    if (!loopbackOrigin(req.headers.origin)) {
      res.writeHead(403, { 'content-type': 'application/json', vary: 'Origin' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Origin not allowed: the local cluster answers pages on loopback origins (localhost, 127.0.0.1, [::1]) only' } }));
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...corsHeaders(req), 'access-control-allow-methods': 'POST, OPTIONS', 'access-control-allow-headers': 'content-type, solana-client', 'access-control-max-age': '86400' });
      return void res.end();
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { 'content-type': 'text/plain', allow: 'POST, OPTIONS' });
      return void res.end('Used HTTP Method is not allowed. POST or OPTIONS is required');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) return send(res, 413, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Request too large' } });
      chunks.push(chunk as Buffer);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(res, 200, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    }
    if (Array.isArray(body)) {
      if (body.length === 0) return send(res, 200, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request' } });
      const answers = [];
      for (const request of body) answers.push(await handle(request));
      return send(res, 200, answers);
    }
    send(res, 200, await handle(body));
  };
  const server: Server = createServer((req, res) => {
    onRequest(req, res).catch((error: unknown) => {
      logger.warn({ err: error }, 'embedded RPC request failed');
      if (!res.headersSent) send(res, 500, { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const subscriptions = createSubscriptions(options.chain, logger, options.subscriptionLimits);
  subscriptions.attach(server);
  const servers = [server];
  const { port } = server.address() as AddressInfo;
  // Clients derive the PubSub URL as the RPC port + 1 (web3.js, the Solana CLI): serve it there too.
  if (options.port !== 0 && port < 65535) {
    const pubsub = createServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' });
      res.end('WebSocket only');
    });
    const listening = await new Promise<boolean>((resolve) => {
      pubsub.once('error', (error) => {
        logger.warn({ err: error, port: port + 1 }, 'embedded chain PubSub port unavailable; subscriptions stay on the RPC port');
        resolve(false);
      });
      pubsub.listen(port + 1, options.host, () => resolve(true));
    });
    if (listening) {
      subscriptions.attach(pubsub);
      servers.push(pubsub);
    }
  }
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  logger.info({ url }, 'embedded chain serves JSON-RPC');
  return {
    url,
    wsUrl: url.replace(/^http/, 'ws'),
    port,
    async close() {
      subscriptions.close();
      // Requests in flight get their answer; idle keep-alive connections close now, the rest after 1 s.
      for (const s of servers) {
        const closed = new Promise<void>((resolve) => s.close(() => resolve()));
        s.closeIdleConnections();
        const force = setTimeout(() => s.closeAllConnections(), 1000);
        await closed;
        clearTimeout(force);
      }
    },
  };
}
