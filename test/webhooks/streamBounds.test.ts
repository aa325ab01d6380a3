import type { Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { startTestService, type TestService } from '../support/service.js';
import { openEventStream, type OpenStream } from './support/sseClient.js';

/** Open event streams are bounded per key, per owner and in all (docs/api.md, "Event stream"), over real HTTP. */
let t: TestService;
let server: Server;
let base: string;
const streams: OpenStream[] = [];

beforeEach(async () => {
  t = await startTestService({ env: { EVENT_STREAMS_PER_KEY: '3', EVENT_STREAMS_PER_OWNER: '5', EVENT_STREAMS_MAX: '7', RATE_LIMIT_PER_MINUTE: '1000000' } });
  const listening = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { requestTimeoutMs: 5000, maxConnectionsPerClient: 64 } });
  server = listening.server as Server;
  base = `http://127.0.0.1:${listening.port}`;
});

afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t.close();
});

async function open(key: string): Promise<OpenStream> {
  const stream = await openEventStream(base, key);
  streams.push(stream);
  return stream;
}

function expectRefused(stream: OpenStream, bound: string, limit: number): void {
  expect(stream.status).toBe(429);
  const { error } = stream.json as { error: { code: string; message: string; details: { bound: string; limit: number } } };
  expect(error.code).toBe('too_many_streams');
  expect(error.details).toEqual({ bound, limit });
  expect(error.message).toContain(`${limit} event streams open`);
}

describe('open event streams', () => {
  it('are bounded per key, per owner and in all with 429 too_many_streams, and a closed stream frees its place', async () => {
    const acme1 = await t.key('acme', ['launches:read']);
    const acme2 = await t.key('acme', ['launches:read']);
    const globex = await t.key('globex', ['launches:read']);
    const other = await t.key('initech', ['launches:read']);

    const first = await open(acme1);
    for (let i = 0; i < 2; i++) expect((await open(acme1)).status).toBe(200);
    expectRefused(await open(acme1), 'key', 3);
    // The owner's other key: two more, then the owner's bound.
    for (let i = 0; i < 2; i++) expect((await open(acme2)).status).toBe(200);
    expectRefused(await open(acme2), 'owner', 5);
    // Another owner: two more, then the service's bound for everyone.
    for (let i = 0; i < 2; i++) expect((await open(globex)).status).toBe(200);
    expectRefused(await open(other), 'service', 7);

    // A stream that closes gives its place back, to its key and to everyone.
    first.close();
    let again: OpenStream | undefined;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      again = await open(acme1);
      if (again.status === 200) break;
    }
    expect(again?.status).toBe(200);
    expect(streams.filter((s) => s.status === 200)).toHaveLength(8);
  });
});
