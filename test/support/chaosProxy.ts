import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import bs58 from 'bs58';

/**
 * The faults a public RPC provider shows on a normal day, in the style of Toxiproxy's toxics: each
 * applies to a request with its probability, drawn from one seeded generator, so a run can be
 * repeated exactly (as far as the requests arrive in the same order).
 */
export interface ChaosToxics {
  /** `429 Too Many Requests` with `Retry-After: retryAfterSeconds`, not forwarded. */
  rateLimit?: number;
  retryAfterSeconds?: number;
  /** `503 Service Unavailable`, not forwarded. */
  unavailable?: number;
  /** Forwarded after `latencyMs`. */
  latency?: number;
  latencyMs?: number;
  /** Forwarded and acted on, then the answer is lost: the connection stays open and silent, so the client waits for its own timeout. */
  lostAnswer?: number;
  /** `sendTransaction` only: answered with the transaction's signature as if accepted, never forwarded (a leader dropped it). */
  droppedSend?: number;
}

export type ChaosFault = 'rateLimit' | 'unavailable' | 'latency' | 'lostAnswer' | 'droppedSend' | 'outage';

export interface ChaosProxy {
  readonly url: string;
  /** Faults injected so far, by kind. */
  readonly faults: Record<ChaosFault, number>;
  /** Requests seen so far (JSON-RPC methods, in order). */
  readonly requests: string[];
  setToxics(toxics: ChaosToxics): void;
  /** Answers `method` with `result` instead of forwarding it (a provider's view the local chain has not: recent prioritization fees). */
  answer(method: string, result: unknown): void;
  /** Outage mode: every connection is cut at once, nothing forwarded, until `up()` (or for `ms`, when given). */
  down(ms?: number): void;
  up(): void;
  close(): Promise<void>;
}

/** mulberry32: a small seeded generator, uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The first signature of a base64 wire transaction (legacy or v0: a compact-u16 count, then the signatures). */
function firstSignature(base64: string): string | undefined {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length < 65 || (bytes[0] ?? 0) === 0 || (bytes[0] ?? 0) > 127) return undefined;
  return bs58.encode(bytes.subarray(1, 65));
}

/** Starts a chaos proxy on 127.0.0.1 (a random port) in front of the JSON-RPC server at `target`. */
export async function startChaosProxy(options: { target: string; seed: number; toxics?: ChaosToxics }): Promise<ChaosProxy> {
  const target = new URL(options.target);
  const random = seededRandom(options.seed);
  let toxics: ChaosToxics = options.toxics ?? {};
  let downUntil = 0;
  const faults: Record<ChaosFault, number> = { rateLimit: 0, unavailable: 0, latency: 0, lostAnswer: 0, droppedSend: 0, outage: 0 };
  const requests: string[] = [];
  const answers = new Map<string, unknown>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const isDown = () => downUntil > Date.now();

  const reply = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const delay = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => (timers.delete(timer), resolve()), ms);
      timers.add(timer);
    });

  const forward = (body: Buffer, headers: IncomingMessage['headers']) =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { 'content-type': headers['content-type'] ?? 'application/json', 'content-length': body.length } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      upstream.on('error', reject);
      upstream.end(body);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    let rpc: { id?: unknown; method?: unknown; params?: unknown } = {};
    try {
      const parsed = JSON.parse(body.toString('utf8')) as unknown;
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) rpc = parsed as typeof rpc;
    } catch {
      // Forwarded as is: the server answers a malformed request itself.
    }
    const method = typeof rpc.method === 'string' ? rpc.method : '?';
    requests.push(method);
    if (isDown()) {
      faults.outage++;
      return void req.socket.destroy();
    }
    if (answers.has(method)) return reply(res, 200, { jsonrpc: '2.0', id: rpc.id ?? null, result: answers.get(method) });
    const draw = (p: number | undefined) => p !== undefined && p > 0 && random() < p;
    if (draw(toxics.rateLimit)) {
      faults.rateLimit++;
      return reply(res, 429, { jsonrpc: '2.0', id: rpc.id ?? null, error: { code: 429, message: 'Too many requests for a specific RPC call' } }, { 'retry-after': String(toxics.retryAfterSeconds ?? 1) });
    }
    if (draw(toxics.unavailable)) {
      faults.unavailable++;
      return reply(res, 503, { jsonrpc: '2.0', id: rpc.id ?? null, error: { code: -32603, message: 'Service unavailable' } });
    }
    if (method === 'sendTransaction' && draw(toxics.droppedSend)) {
      const params = Array.isArray(rpc.params) ? rpc.params : [];
      const signature = typeof params[0] === 'string' ? firstSignature(params[0]) : undefined;
      if (signature) {
        faults.droppedSend++;
        return reply(res, 200, { jsonrpc: '2.0', id: rpc.id ?? null, result: signature });
      }
    }
    if (draw(toxics.latency)) {
      faults.latency++;
      await delay(toxics.latencyMs ?? 300);
    }
    const lose = draw(toxics.lostAnswer);
    const answer = await forward(body, req.headers);
    if (lose) {
      faults.lostAnswer++;
      // Never answered: the socket is kept until the client gives up (or the proxy closes).
      return;
    }
    res.writeHead(answer.status, { 'content-type': String(answer.headers['content-type'] ?? 'application/json') });
    res.end(answer.body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => req.socket.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    faults,
    requests,
    setToxics(next) {
      toxics = next;
    },
    answer(method, result) {
      answers.set(method, result);
    },
    down(ms) {
      downUntil = ms === undefined ? Number.POSITIVE_INFINITY : Date.now() + ms;
      // Connections kept alive from before the outage are cut too.
      for (const socket of sockets) socket.destroy();
    },
    up() {
      downUntil = 0;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
