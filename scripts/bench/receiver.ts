import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** A local webhook receiver for the benchmarks. */
export interface BenchReceiver {
  url: string;
  /** Requests answered (or, when hanging, accepted). */
  count: number;
  /** Event id → performance.now() of the first receipt. */
  firstSeen: Map<string, number>;
  /** Resolves once `count` reaches `n`. */
  waitFor(n: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A node:http receiver on 127.0.0.1 that answers 200 as soon as the body is read (or `delayMs`
 * after: a slow but healthy customer), or never answers (`hang`) to play a dead customer whose
 * requests all time out.
 */
export async function startBenchReceiver(options: { hang?: boolean; record?: boolean; delayMs?: number } = {}): Promise<BenchReceiver> {
  const sockets = new Set<Socket>();
  const waiters: Array<{ n: number; resolve(): void }> = [];
  const receiver: BenchReceiver = { url: '', count: 0, firstSeen: new Map(), waitFor: async () => undefined, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const at = performance.now();
    req.resume();
    req.on('end', () => {
      receiver.count += 1;
      const id = req.headers['x-service-event-id'];
      if (options.record && typeof id === 'string' && !receiver.firstSeen.has(id)) receiver.firstSeen.set(id, at);
      for (let i = waiters.length - 1; i >= 0; i--) {
        const w = waiters[i];
        if (w && receiver.count >= w.n) {
          waiters.splice(i, 1);
          w.resolve();
        }
      }
      const answer = () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      if (options.hang) return;
      if (options.delayMs) setTimeout(answer, options.delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  receiver.url = `http://127.0.0.1:${port}/hook`;
  receiver.waitFor = (n) => (receiver.count >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })));
  receiver.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return receiver;
}
