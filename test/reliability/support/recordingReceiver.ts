import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Every request a receiver got: raw body and headers, for signature checks and dedupe. */
export interface Received {
  body: string;
  headers: IncomingHttpHeaders;
}

export interface RecordingReceiver {
  url: string;
  received: Received[];
  /** Resolves once `n` requests have arrived in total. */
  waitFor(n: number): Promise<void>;
  close(): Promise<void>;
}

/** A receiver on 127.0.0.1 that answers 200 after `delayMs()` (so attempts are in flight when a process dies). */
export async function startRecordingReceiver(delayMs: () => number): Promise<RecordingReceiver> {
  const sockets = new Set<Socket>();
  const received: Received[] = [];
  const waiters: Array<{ n: number; resolve(): void }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      for (const w of waiters.filter((w) => received.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      setTimeout(() => res.writeHead(200).end('ok'), delayMs());
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    waitFor: (n) => (received.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
