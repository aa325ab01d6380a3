import { connect, type Socket } from 'node:net';
import type { ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService;
let server: ServerType;
let port: number;
let key: string;

beforeAll(async () => {
  t = await startTestService({ env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
  key = await t.key('acme', ['launches:write', 'launches:read']);
  ({ server, port } = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { requestTimeoutMs: 1000, maxConnectionsPerClient: 3 } }));
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t?.close();
});

/** A raw client socket that records what it receives and when it closes. */
async function rawClient(): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  const socket = connect(port, '127.0.0.1');
  let data = '';
  socket.on('data', (chunk) => (data += chunk.toString('utf8')));
  socket.on('error', () => undefined);
  const started = performance.now();
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now() - started)));
  await new Promise((resolve) => socket.once('connect', resolve));
  return { socket, received: () => data, closed };
}

describe('socket-level bounds of the HTTP server', () => {
  it('cuts off a body trickled one byte at a time at the request timeout with 408, and creates nothing', async () => {
    const body = JSON.stringify(launchBody());
    const client = await rawClient();
    client.socket.write(`POST /api/launches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`);
    let sent = 0;
    const trickle = setInterval(() => {
      if (!client.socket.destroyed && sent < body.length) client.socket.write(body[sent++]!);
    }, 100);
    const elapsed = await client.closed;
    clearInterval(trickle);
    expect(client.received()).toMatch(/^HTTP\/1\.1 408/);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    // Node's default would hold it 300 s; 1 s timeout + 250 ms check interval, the rest is room for a loaded machine.
    expect(elapsed).toBeLessThan(15_000);
    expect(sent).toBeLessThan(body.length);
    expect(await t.service.db.selectFrom('launches').select('id').execute()).toEqual([]);
  });

  it('cuts off headers that never finish', async () => {
    const client = await rawClient();
    client.socket.write('GET /api/health HTTP/1.1\r\nHost: x\r\n');
    const elapsed = await client.closed;
    expect(elapsed).toBeLessThan(15_000); // Node's default headers timeout is 60 s
  });

  it('answers 429 to a client address holding more than its cap of connections, and serves it again once one closes', async () => {
    const held = [await rawClient(), await rawClient(), await rawClient()];
    const extra = await rawClient();
    await extra.closed;
    expect(extra.received()).toMatch(/^HTTP\/1\.1 429/);
    expect(extra.received()).toContain('"code":"rate_limited"');
    // The held connections still work.
    held[0]!.socket.write('GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await held[0]!.closed;
    expect(held[0]!.received()).toMatch(/^HTTP\/1\.1 200/);
    // One slot is free again.
    const again = await rawClient();
    again.socket.write('HEAD /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await again.closed;
    expect(again.received()).toMatch(/^HTTP\/1\.1 200/);
    for (const c of held) c.socket.destroy();
  });
});
