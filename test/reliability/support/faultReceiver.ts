import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** How the receiver treats one request. */
export type Fault = 'ok' | '500' | 'reset' | 'hang' | 'slow-body' | '302';

/** A receiver on 127.0.0.1 that injects faults; `decide` picks one per request. */
export interface FaultReceiver {
  origin: string;
  /** Every request as `path fault`, in arrival order. */
  log: Array<{ path: string; fault: Fault; eventId: string; attempt: string }>;
  decide: (path: string, n: number) => Fault;
  close(): Promise<void>;
}

/**
 * `500`: an error status. `reset`: the socket is destroyed before any answer. `hang`: never answers.
 * `slow-body`: 200 headers at once, then one body byte every 100 ms for 5 s (longer than any test
 * timeout). `302`: a redirect to `/redirected`, which must never be followed.
 */
export async function startFaultReceiver(): Promise<FaultReceiver> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const receiver: FaultReceiver = { origin: '', log: [], decide: () => 'ok', close: async () => undefined };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      const fault = receiver.decide(path, receiver.log.length);
      receiver.log.push({ path, fault, eventId: String(req.headers['x-service-event-id'] ?? ''), attempt: String(req.headers['x-service-attempt'] ?? '') });
      switch (fault) {
        case 'ok':
          return void res.writeHead(200).end('ok');
        case '500':
          return void res.writeHead(500, { 'content-type': 'text/plain' }).end('internal receiver error');
        case 'reset':
          return void req.socket.destroy();
        case 'hang':
          return;
        case '302':
          return void res.writeHead(302, { location: '/redirected' }).end();
        case 'slow-body': {
          res.writeHead(200, { 'content-type': 'text/plain' });
          let sent = 0;
          const timer = setInterval(() => {
            if (sent++ >= 50 || res.destroyed) {
              clearInterval(timer);
              timers.delete(timer);
              res.end();
            } else res.write('.');
          }, 100);
          timers.add(timer);
        }
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return receiver;
}
