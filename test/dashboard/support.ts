import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import type { TestService } from '../support/service.js';

/** Debian's chromium, as `.ci/run` installs it; the browser tests skip (saying why) without it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const chromiumMissing = existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** Where the test run writes its page screenshots (git-ignored). */
export function screenshotDir(): string {
  const dir = fileURLToPath(new URL('../../test-results/screenshots/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A receiver that answers 500 until told otherwise, then 200 to signatures it verifies. */
export interface SwitchReceiver {
  origin: string;
  healthy: boolean;
  /** Event ids whose signature verified with the secret. */
  verified: string[];
  failures: number;
  close(): Promise<void>;
}

export async function startSwitchReceiver(secret: string, healthy: boolean): Promise<SwitchReceiver> {
  const receiver: SwitchReceiver = { origin: '', healthy, verified: [], failures: 0, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (!receiver.healthy) {
        receiver.failures++;
        return void res.writeHead(500, { 'content-type': 'text/plain' }).end('receiver is down for maintenance');
      }
      try {
        const { payload } = verifyWebhook<{ id: string }>(Buffer.concat(chunks), req.headers, secret);
        receiver.verified.push(payload.id);
        res.writeHead(200).end('ok');
      } catch {
        res.writeHead(400).end('bad signature');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** Signs in through the form like a browser would; returns the session cookie and its Set-Cookie line. */
export async function signIn(t: TestService, key: string): Promise<{ cookie: string; setCookie: string }> {
  const form = await t.request('/dashboard/sign-in');
  const login = /dash_login=([^;]+)/.exec(form.headers.get('set-cookie') ?? '')?.[1] ?? '';
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const res = await t.request('/dashboard/sign-in', {
    method: 'POST',
    headers: { cookie: `dash_login=${login}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ key, _csrf: csrf }).toString(),
  });
  expect(res.status).toBe(303);
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('dash_session=')) ?? '';
  return { cookie: setCookie.split(';')[0] ?? '', setCookie };
}
