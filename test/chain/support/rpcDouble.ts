import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EmbeddedBackend } from '../../../src/chain/embedded/backend.js';
import { createRpcHandler } from '../../../src/chain/embedded/rpcServer.js';

/** Faults the double can inject into the next requests. */
/** `lost_response` executes the request, then never answers (the client times out); `rate_limited` is a 429 with `Retry-After: 1`. */
export type Fault = '429' | 'rate_limited' | '503' | 'hang' | 'lost_response' | 'blockhash_not_found';

/**
 * The embedded chain's own JSON-RPC handler (the product's local cluster, docs/chain.md) behind an HTTP
 * server that can inject transport faults: 429s, 503s, hangs, lost responses.
 */
export interface RpcDouble {
  url: string;
  /** Methods requested so far, in order. */
  readonly requests: string[];
  /** The next `count` requests (of `method`, when given) fail with `fault`. */
  inject(fault: Fault, count?: number, method?: string): void;
  close(): Promise<void>;
}

const blockhashNotFound = { code: -32002, message: 'Transaction simulation failed: Blockhash not found', data: { err: 'BlockhashNotFound', logs: [] } };

/** Starts the double on 127.0.0.1 with a random port. */
export async function startRpcDouble(chain: EmbeddedBackend): Promise<RpcDouble> {
  const requests: string[] = [];
  const faults: Array<{ fault: Fault; method: string | undefined }> = [];
  const hanging = new Set<ServerResponse>();
  const handler = createRpcHandler(chain);

  const respond = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown; method: string; params?: unknown[] };
    requests.push(body.method);
    const index = faults.findIndex((f) => f.method === undefined || f.method === body.method);
    const fault = index >= 0 ? faults.splice(index, 1)[0]?.fault : undefined;
    if (fault === 'hang') return void hanging.add(res);
    if (fault === '429') return respond(res, 429, { jsonrpc: '2.0', id: body.id, error: { code: 429, message: 'Too many requests' } });
    if (fault === 'rate_limited') {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: 429, message: 'Too many requests' } }));
    }
    if (fault === '503') return respond(res, 503, { jsonrpc: '2.0', id: body.id, error: { code: -32603, message: 'Service unavailable' } });
    if (fault === 'blockhash_not_found') return respond(res, 200, { jsonrpc: '2.0', id: body.id, error: blockhashNotFound });
    const answer = await handler(body);
    if (fault === 'lost_response') return void hanging.add(res);
    respond(res, 200, answer);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => respond(res, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    inject(fault, count = 1, method) {
      for (let i = 0; i < count; i++) faults.push({ fault, method: fault === 'blockhash_not_found' ? 'sendTransaction' : method });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
