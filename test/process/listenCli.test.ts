import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, connect, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerType } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { startHttpServer } from '../../src/http/server.js';
import { TOKEN_LAUNCH_EVENTS } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * `npm run listen` (scripts/listen.ts) as a real process against a running service, forwarding to a
 * real local receiver that verifies both signature schemes; the connection to the service goes
 * through a TCP proxy the test cuts in the middle of a launch.
 */
const root = join(import.meta.dirname, '..', '..');
let t: TestService;
let server: ServerType;
let serviceUrl: string;
let cli: ChildProcess | undefined;
const cleanups: Array<() => Promise<void> | void> = [];

beforeEach(async () => {
  t = await startTestService();
  t.service.start();
  const listening = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { requestTimeoutMs: 5000, maxConnectionsPerClient: 64 } });
  server = listening.server;
  serviceUrl = `http://127.0.0.1:${listening.port}`;
});

afterEach(async () => {
  if (cli && cli.exitCode === null) cli.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await t.close();
  if ('closeAllConnections' in server) server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A TCP proxy to `port` whose open connections the test can cut. */
async function startProxy(port: number): Promise<{ url: string; connections: () => number; cut(): void }> {
  const open = new Set<Socket>();
  let count = 0;
  const proxy: TcpServer = createTcpServer((client) => {
    count++;
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => (open.forEach((s) => s.destroy()), proxy.close(() => resolve()))));
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, connections: () => count, cut: () => open.forEach((s) => s.destroy()) };
}

interface Received {
  eventId: string | undefined;
  event: string | undefined;
  service: boolean;
  standard: boolean;
}

/** A receiver that verifies each request with both schemes against the secret the CLI printed. */
async function startVerifyingReceiver(secret: () => string): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const receiver: Server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const { 'webhook-signature': _sig, 'webhook-id': _id, 'webhook-timestamp': _ts, ...serviceHeaders } = req.headers;
      const verifies = (headers: typeof req.headers) => {
        try {
          return verifyWebhook(body, headers, secret());
        } catch {
          return undefined;
        }
      };
      const service = verifies(serviceHeaders);
      const standard = verifies(req.headers);
      received.push({ eventId: service?.eventId, event: service?.event, service: service?.scheme === 'service', standard: standard?.scheme === 'standard' });
      res.writeHead(received.length === 1 ? 202 : 200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => (receiver.closeAllConnections(), receiver.close(() => resolve()))));
  return { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, received };
}

/** Runs the CLI; `lines` fills with its stdout lines, `waitFor` resolves at the first line matching. */
function runCli(args: string[], env: Record<string, string>) {
  const lines: string[] = [];
  let stderr = '';
  const waiters: Array<{ test: (line: string) => boolean; resolve: (line: string) => void }> = [];
  // DATA_DIR: where the CLI keeps its secret and place (the service's own data directory, as in development).
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'listen.ts'), ...args], { cwd: root, env: { ...process.env, DATA_DIR: t.dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  cli = child;
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    partial += chunk.toString('utf8');
    const parts = partial.split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      for (const w of [...waiters]) {
        if (!w.test(line)) continue;
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    stderr: () => stderr,
    exited,
    waitFor(test: (line: string) => boolean, timeoutMs = 30_000): Promise<string> {
      const found = lines.find(test);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no such line within ${timeoutMs} ms; stdout: ${lines.join(' | ')}; stderr: ${stderr}`)), timeoutMs);
        waiters.push({ test, resolve: (line) => (clearTimeout(timer), resolve(line)) });
      });
    },
  };
}

const forwardedLines = (lines: string[]) => lines.filter((l) => /^\S+\.\S+ evt_\S+ → /.test(l));

describe('npm run listen', () => {
  it('forwards every event of a launch in order, signed with both schemes, across a dropped connection, and stops on Ctrl-C', async () => {
    const key = await t.key('acme', ['launches:read', 'launches:write']);
    const proxy = await startProxy(Number(new URL(serviceUrl).port));
    let secret = '';
    const receiver = await startVerifyingReceiver(() => secret);
    const run = runCli(['--forward-to', receiver.url, '--events', 'launch.*'], { LAUNCH_API_KEY: key, LAUNCH_SERVICE_URL: proxy.url, LAUNCH_LISTEN_SECRET: '' });
    secret = /(whsec_\S+)/.exec(await run.waitFor((l) => l.includes('whsec_')))![1]!;
    await run.waitFor((l) => l.startsWith('Ready'));

    const launchId = await t.createLaunch(key);
    await run.waitFor(() => forwardedLines(run.lines).length >= 2);
    proxy.cut();
    await run.waitFor((l) => l.startsWith('Reconnected'));
    await run.waitFor(() => forwardedLines(run.lines).length >= TOKEN_LAUNCH_EVENTS.length);

    const listed = ((await (await t.request(`/api/launches/${launchId}/events`, { key })).json()) as { events: Array<{ id: string; event: string }> }).events;
    const expected = listed.map((e) => `${e.event} ${e.id}`);
    expect(forwardedLines(run.lines).map((l) => l.split(' → ')[0])).toEqual(expected);
    expect(forwardedLines(run.lines).map((l) => l.split(' → ')[1])).toEqual(['202', ...expected.slice(1).map(() => '200')]);
    expect(receiver.received).toEqual(listed.map((e) => ({ eventId: e.id, event: e.event, service: true, standard: true })));
    expect(proxy.connections()).toBeGreaterThanOrEqual(2);

    run.child.kill('SIGINT');
    expect(await run.exited).toBe(0);
    expect(run.lines.at(-1)).toBe('Stopped.');
  });

  it('killed mid-launch and started again, signs with the same secret without printing it and forwards every event emitted while it was down', async () => {
    const key = await t.key('acme', ['launches:read', 'launches:write']);
    let secret = '';
    const receiver = await startVerifyingReceiver(() => secret);
    const args = ['--forward-to', receiver.url, '--events', 'launch.*'];
    const env = { LAUNCH_API_KEY: key, LAUNCH_SERVICE_URL: serviceUrl, LAUNCH_LISTEN_SECRET: '' };
    const first = runCli(args, env);
    secret = /(whsec_\S+)/.exec(await first.waitFor((l) => l.includes('whsec_')))![1]!;
    await first.waitFor((l) => l.startsWith('Ready'));
    const statePath = join(t.dir, 'listen.json');
    expect(statSync(statePath).mode & 0o777).toBe(0o600);

    const inFlight = await t.createLaunch(key);
    await first.waitFor(() => forwardedLines(first.lines).length >= 2);
    first.child.kill('SIGKILL');
    await first.exited;
    const forwardedBefore = receiver.received.length;
    // While it is down: the first launch goes on, and a second one runs from start to end.
    const missed = await t.createLaunch(key);
    const eventsOf = async (launchId: string) => ((await (await t.request(`/api/launches/${launchId}/events`, { key })).json()) as { events: Array<{ id: string; event: string }> }).events;
    for (const launchId of [inFlight, missed]) {
      for (let i = 0; (await eventsOf(launchId)).length < TOKEN_LAUNCH_EVENTS.length; i++) {
        if (i > 600) throw new Error(`launch ${launchId} did not finish`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const expected = [...(await eventsOf(inFlight)), ...(await eventsOf(missed))].map((e) => ({ eventId: e.id, event: e.event, service: true, standard: true }));
    expect(receiver.received.length).toBeLessThan(expected.length);

    const second = runCli(args, env);
    await second.waitFor((l) => l.startsWith('Ready'));
    await second.waitFor(() => receiver.received.length - forwardedBefore >= expected.length - forwardedBefore);
    await second.waitFor(() => new Set(receiver.received.map((r) => r.eventId)).size >= expected.length);
    // Every event of both launches arrived, verified with the secret the first run printed (a
    // duplicate of the last one forwarded before the kill is allowed, none is missing).
    expect(receiver.received.every((r) => r.service && r.standard)).toBe(true);
    expect(expected.every((e) => receiver.received.some((r) => r.eventId === e.eventId && r.event === e.event))).toBe(true);
    expect(second.lines.join('\n')).not.toContain('whsec_');
    expect(second.lines[0]).toContain('the same as before');
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);

    const printed = runCli(['--print-secret'], { LAUNCH_LISTEN_SECRET: '' });
    expect(await printed.exited).toBe(0);
    expect(printed.lines).toEqual([secret]);
  });

  it('--from now skips the events emitted while it was down', async () => {
    const key = await t.key('acme', ['launches:read', 'launches:write']);
    const receiver = await startVerifyingReceiver(() => '');
    const args = ['--forward-to', receiver.url, '--events', 'launch.*'];
    const env = { LAUNCH_API_KEY: key, LAUNCH_SERVICE_URL: serviceUrl, LAUNCH_LISTEN_SECRET: '' };
    const first = runCli(args, env);
    await first.waitFor((l) => l.startsWith('Ready'));
    first.child.kill('SIGKILL');
    await first.exited;
    const missed = await t.createLaunch(key);
    const listed = async (launchId: string) => ((await (await t.request(`/api/launches/${launchId}/events`, { key })).json()) as { events: Array<{ id: string }> }).events;
    while ((await listed(missed)).length < TOKEN_LAUNCH_EVENTS.length) await new Promise((resolve) => setTimeout(resolve, 50));

    const second = runCli([...args, '--from', 'now'], env);
    await second.waitFor((l) => l.startsWith('Ready'));
    const next = await t.createLaunch(key);
    await second.waitFor(() => forwardedLines(second.lines).length >= TOKEN_LAUNCH_EVENTS.length);
    const ids = new Set((await listed(next)).map((e) => e.id));
    expect(forwardedLines(second.lines).map((l) => l.split(' ')[1])).toEqual([...ids]);
  });

  it('says in one line why the service refused it, and exits 1', async () => {
    const run = runCli(['--forward-to', 'http://127.0.0.1:9/hooks'], { LAUNCH_API_KEY: 'sk_not_a_key', LAUNCH_SERVICE_URL: serviceUrl });
    expect(await run.exited).toBe(1);
    expect(run.stderr().trim()).toBe('The service refused the stream (401): API key is invalid or revoked');
  });

  it('refuses a missing --forward-to or key before connecting', async () => {
    const noUrl = runCli([], { LAUNCH_API_KEY: 'sk_x', LAUNCH_SERVICE_URL: serviceUrl });
    expect(await noUrl.exited).toBe(1);
    expect(noUrl.stderr()).toContain('--forward-to is required');
    const noKey = runCli(['--forward-to', 'http://127.0.0.1:9/hooks'], { LAUNCH_API_KEY: '', LAUNCH_SERVICE_URL: serviceUrl });
    expect(await noKey.exited).toBe(1);
    expect(noKey.stderr()).toContain('an API key is required');
  });
});
