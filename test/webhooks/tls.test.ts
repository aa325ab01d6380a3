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

describe('attempt errors in words', () => {
  it('says a TLS handshake against a plain-http endpoint failed and asks whether it speaks https, keeping the raw text', async () => {
    const { createServer: createHttpServer } = await import('node:http');
    const plain = createHttpServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const client = createWebhookHttpClient({ timeoutMs: 2_000, guard: false });
    try {
      const outcome = await client.send({ url: `https://127.0.0.1:${(plain.address() as AddressInfo).port}/hook`, body: '{}', headers: {} });
      expect(outcome).toMatchObject({ ok: false, errorClass: 'tls_error' });
      expect(outcome.errorMessage).toMatch(/^TLS handshake failed — does the endpoint speak https\? \(details: .+\)$/);
    } finally {
      await client.close();
      plain.close();
    }
  });

  it('says a refused connection in words', async () => {
    const client = createWebhookHttpClient({ timeoutMs: 2_000, guard: false });
    try {
      const outcome = await client.send({ url: 'http://127.0.0.1:9/hook', body: '{}', headers: {} });
      expect(outcome).toMatchObject({ ok: false, errorClass: 'connection_refused' });
      expect(outcome.errorMessage).toMatch(/^connection refused: is the receiver running and listening on this port\? \(details: .*ECONNREFUSED/);
    } finally {
      await client.close();
    }
  });
});

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
      expect(wrongName.errorMessage).toMatch(/^TLS certificate rejected: it is not valid for the webhook URL's host name \(details: .+\)$/);
    } finally {
      await client.close();
    }
  });

  it('fails with a TLS error when the certificate is not trusted', async () => {
    const client = createWebhookHttpClient({ timeoutMs: 2_000, guard: true, lookup, addressPolicy });
    try {
      const untrusted = await client.send({ url: `https://hooks.customer.test:${port}/hook`, body: '{}', headers: {} });
      expect(untrusted).toMatchObject({ ok: false, errorClass: 'tls_error' });
      expect(untrusted.errorMessage).toMatch(/^TLS certificate rejected: it is not signed by a trusted authority .*\(details: .*self.signed/i);
    } finally {
      await client.close();
    }
  });
});
