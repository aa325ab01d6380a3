import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forbiddenAddressReason } from '../../src/webhooks/addressPolicy.js';
import type { HostLookup } from '../../src/webhooks/guardedConnector.js';
import { createWebhookHttpClient } from '../../src/webhooks/httpClient.js';

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!hasOpenssl())('guarded client over https', () => {
  const dir = mkdtempSync(join(tmpdir(), 'webhooks-tls-'));
  let server: Server;
  let port = 0;
  let cert: Buffer;
  const sni: Array<string | false | null> = [];

  beforeAll(async () => {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1',
      '-subj', '/CN=hooks.customer.test', '-addext', 'subjectAltName=DNS:hooks.customer.test'], { stdio: 'ignore' });
    cert = readFileSync(join(dir, 'cert.pem'));
    server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
      sni.push((req.socket as import('node:tls').TLSSocket).servername);
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  // Every name resolves to the local receiver; the policy lets exactly 127.0.0.1 through, nothing else.
  const lookup: HostLookup = async () => [{ address: '127.0.0.1', family: 4 }];
  const addressPolicy = (address: string) => (address === '127.0.0.1' ? undefined : forbiddenAddressReason(address));

  it('connects to the checked address and verifies the certificate against the URL host name (SNI)', async () => {
    const client = createWebhookHttpClient({ timeoutMs: 2_000, guard: true, lookup, addressPolicy, ca: cert });
    try {
      const good = await client.send({ url: `https://hooks.customer.test:${port}/hook`, body: '{}', headers: {} });
      expect(good).toMatchObject({ ok: true, statusCode: 200, responseBody: 'ok' });
      expect(sni).toEqual(['hooks.customer.test']);
      const wrongName = await client.send({ url: `https://other.customer.test:${port}/hook`, body: '{}', headers: {} });
      expect(wrongName).toMatchObject({ ok: false, errorClass: 'tls_error' });
    } finally {
      await client.close();
    }
  });

  it('fails with a TLS error when the certificate is not trusted', async () => {
    const client = createWebhookHttpClient({ timeoutMs: 2_000, guard: true, lookup, addressPolicy });
    try {
      expect(await client.send({ url: `https://hooks.customer.test:${port}/hook`, body: '{}', headers: {} })).toMatchObject({ ok: false, errorClass: 'tls_error' });
    } finally {
      await client.close();
    }
  });
});
