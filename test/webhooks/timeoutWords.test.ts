import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createWebhookHttpClient } from '../../src/webhooks/httpClient.js';

const request = { body: '{"id":"evt_1"}', headers: { 'content-type': 'application/json' } };

describe('a timed-out attempt says what happened, in words (docs/delivery.md)', () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function receiver(handler: (res: import('node:http').ServerResponse) => void): Promise<string> {
    const sockets = new Set<Socket>();
    const server: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => handler(res));
    });
    server.on('connection', (s) => sockets.add(s));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise((resolve) => {
          for (const s of sockets) s.destroy();
          server.close(resolve);
        }),
    );
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  }

  function client() {
    const c = createWebhookHttpClient({ timeoutMs: 300, guard: false });
    closers.push(() => c.close());
    return c;
  }

  it('a receiver that never answers', async () => {
    const url = await receiver(() => undefined);
    const outcome = await client().send({ url, ...request });
    expect(outcome.errorClass).toBe('timeout');
    expect(outcome.errorMessage).toMatch(/^no complete answer within 300 ms of sending the request \(details: .+\)$/);
    expect(outcome.durationMs).toBeGreaterThanOrEqual(290);
  });

  it('a receiver that sends its headers and then stops', async () => {
    const url = await receiver((res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    const outcome = await client().send({ url, ...request });
    expect(outcome.ok).toBe(false);
    expect(outcome.errorClass).toBe('timeout');
    expect(outcome.errorMessage).toMatch(/^no complete answer within 300 ms of sending the request \(details: .+\)$/);
  });
});
