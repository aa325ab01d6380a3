import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { createEndpoint, rotateEndpointSecret, updateEndpoint } from '../../src/webhooks/endpoints/endpoints.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, engineConfig } from '../support/webhooks.js';

const packageDir = join(import.meta.dirname, '..', '..', 'packages', 'webhooks');
const SECRET = 'whsec_package_test_secret';

// A customer's receiver: plain JavaScript, the installed package, node:http. It answers 200 when the
// delivery verifies and 401 with the reason otherwise, and prints one JSON line per request.
const ESM = `import { createServer } from 'node:http';
import { verifyWebhook, WebhookVerificationError } from '@launch-service/webhooks';
${serverBody()}`;
const CJS = `const { createServer } = require('node:http');
const { verifyWebhook, WebhookVerificationError } = require('@launch-service/webhooks');
${serverBody()}`;

function serverBody(): string {
  return `const secrets = JSON.parse(process.env.SECRETS);
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    try {
      const v = verifyWebhook(Buffer.concat(chunks), req.headers, secrets, { toleranceSeconds: 300 });
      console.log(JSON.stringify({ ok: true, id: v.payload.id, event: v.event, scheme: v.scheme }));
      res.writeHead(200).end('ok');
    } catch (error) {
      const reason = error instanceof WebhookVerificationError ? error.reason : String(error);
      console.log(JSON.stringify({ ok: false, reason }));
      res.writeHead(401).end(reason);
    }
  });
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
`;
}

interface RunningReceiver {
  url: string;
  lines: Array<Record<string, unknown>>;
  child: ChildProcess;
}

async function startReceiver(dir: string, file: string, secrets: string[]): Promise<RunningReceiver> {
  const child = spawn(process.execPath, [file], { cwd: dir, env: { ...process.env, SECRETS: JSON.stringify(secrets) }, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Array<Record<string, unknown>> = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (typeof parsed.port === 'number') resolve(parsed.port);
      else lines.push(parsed);
    });
  });
  return { url: `http://127.0.0.1:${port}/hooks`, lines, child };
}

describe('the receiver package (packages/webhooks) installed from its tarball', () => {
  let work: string;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'receiver-pkg-'));
    // `npm pack` builds the package (prepack) and writes the tarball a customer installs.
    execFileSync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: packageDir, stdio: ['ignore', 'pipe', 'inherit'] });
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error('npm pack wrote no tarball');
    const app = join(work, 'app');
    execFileSync('mkdir', [app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'customer-receiver', version: '1.0.0', private: true }));
    // Zero dependencies: installing the tarball needs no registry.
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', join(work, tarball)], { cwd: app, stdio: ['ignore', 'pipe', 'inherit'] });
    writeFileSync(join(app, 'receiver.mjs'), ESM);
    writeFileSync(join(app, 'receiver.cjs'), CJS);
  }, 120_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('ships type declarations that a TypeScript consumer resolves in both module systems', () => {
    const app = join(work, 'app');
    const check = `import { verifyWebhook, WebhookVerificationError, type VerifiedWebhook } from '@launch-service/webhooks';
const v: VerifiedWebhook<{ id: string }> = verifyWebhook<{ id: string }>('{}', { 'x-service-signature': 'sha256=0' }, ['whsec_a'], { toleranceSeconds: 300, now: new Date() });
const id: string = v.payload.id;
const reason: 'signature_mismatch' | string = new WebhookVerificationError('signature_mismatch', 'x').reason;
export { id, reason };
`;
    writeFileSync(join(app, 'check.mts'), check);
    writeFileSync(join(app, 'check.cts'), check);
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', strict: true, noEmit: true, types: [], lib: ['es2022', 'dom'], skipLibCheck: true }, files: ['check.mts', 'check.cts'] }));
    const tsc = join(import.meta.dirname, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc');
    execFileSync(process.execPath, [tsc, '-p', app], { cwd: app, stdio: ['ignore', 'inherit', 'inherit'] });
    // A wrong use is a compile error, so the check above can fail.
    writeFileSync(join(app, 'check.mts'), `import { verifyWebhook } from '@launch-service/webhooks';\nverifyWebhook('{}', {}, 42);\n`);
    expect(() => execFileSync(process.execPath, [tsc, '-p', app], { cwd: app, stdio: 'pipe' })).toThrow();
  });

  it('verifies real deliveries from plain JavaScript in both ES modules and CommonJS', async () => {
    const app = join(work, 'app');
    const receivers = [await startReceiver(app, 'receiver.mjs', [SECRET]), await startReceiver(app, 'receiver.cjs', ['whsec_other', SECRET])];
    const wrong = await startReceiver(app, 'receiver.cjs', ['whsec_wrong']);
    const tdb = await createTestDb();
    const clock = manualClock(Date.now()); // the receivers check timestamps against their own wall clock
    const box = newSecretBox();
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig(), secretBox: box });
    try {
      const sent: string[] = [];
      for (const r of [...receivers, wrong]) {
        const launchId = await insertLaunch(tdb.db, clock, { url: r.url, secret: SECRET, box });
        sent.push(...(await commitEvents(tdb.db, clock, launchId, 2)));
      }
      await engine.dispatcher.drain();
      for (const [i, r] of receivers.entries()) {
        // The two events were committed in the same millisecond: delivered in any order.
        expect(r.lines).toHaveLength(2);
        expect(r.lines).toEqual(
          expect.arrayContaining([
            { ok: true, id: sent[2 * i], event: 'launch.step_complete', scheme: 'service' },
            { ok: true, id: sent[2 * i + 1], event: 'launch.step_complete', scheme: 'service' },
          ]),
        );
      }
      expect(wrong.lines).toEqual([
        { ok: false, reason: 'signature_mismatch' },
        { ok: false, reason: 'signature_mismatch' },
      ]);
      const statuses = await tdb.db.selectFrom('deliveries').select(['url', 'status', 'last_status_code']).execute();
      expect(statuses.filter((d) => d.status === 'delivered')).toHaveLength(4);
      expect(statuses.filter((d) => d.url === wrong.url).map((d) => d.last_status_code)).toEqual([401, 401]);
    } finally {
      await engine.stop();
      await tdb.close();
      for (const r of [...receivers, wrong]) r.child.kill('SIGKILL');
    }
  });

  it('verifies Standard Webhooks and rotated-secret deliveries of webhook endpoints from plain JavaScript', async () => {
    const app = join(work, 'app');
    const tdb = await createTestDb();
    const clock = manualClock(Date.now());
    const box = newSecretBox();
    const deps = { db: tdb.db, clock, secretBox: box };
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig(), secretBox: box });
    const started: RunningReceiver[] = [];
    try {
      const standard = await createEndpoint(deps, 'acme', { url: 'http://127.0.0.1:9/none', events: ['*'], description: null, signatureScheme: 'standard' });
      const rotated = await createEndpoint(deps, 'acme', { url: 'http://127.0.0.1:9/none', events: ['*'], description: null, signatureScheme: 'service' });
      const { secret: newSecret } = await rotateEndpointSecret(deps, rotated.endpoint.id, 'acme', 3600);
      // ESM holds the standard endpoint's secret; one CJS receiver only the pre-rotation secret, another only the new one.
      const esm = await startReceiver(app, 'receiver.mjs', [standard.secret]);
      const oldOnly = await startReceiver(app, 'receiver.cjs', [rotated.secret]);
      const newOnly = await startReceiver(app, 'receiver.cjs', [newSecret]);
      const launchSide = await startReceiver(app, 'receiver.cjs', [SECRET]);
      started.push(esm, oldOnly, newOnly, launchSide);
      await updateEndpoint(deps, standard.endpoint.id, 'acme', { url: esm.url });
      await updateEndpoint(deps, rotated.endpoint.id, 'acme', { url: oldOnly.url });
      const second = await createEndpoint(deps, 'acme', { url: newOnly.url, events: ['*'], description: null, signatureScheme: 'service' });
      // The second endpoint takes the rotated endpoint's secrets, so a receiver holding only the new secret is tested too.
      const rotatedRow = await tdb.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', rotated.endpoint.id).executeTakeFirstOrThrow();
      await tdb.db.updateTable('webhook_endpoints').set({ secret_enc: rotatedRow.secret_enc, previous_secret_enc: rotatedRow.previous_secret_enc, previous_secret_expires_at: rotatedRow.previous_secret_expires_at }).where('id', '=', second.endpoint.id).execute();

      const launchId = await insertLaunch(tdb.db, clock, { url: launchSide.url, secret: SECRET, box, owner: 'acme' });
      const sent = await commitEvents(tdb.db, clock, launchId, 2);
      await engine.dispatcher.drain();
      // Events committed in the same millisecond are delivered in any order: compared by id.
      const byId = (lines: Array<Record<string, unknown>>) => [...lines].sort((a, b) => String(a.id).localeCompare(String(b.id)));
      const expected = (scheme: string) => byId(sent.map((id) => ({ ok: true, id, event: 'launch.step_complete', scheme })));
      expect(byId(esm.lines)).toEqual(expected('standard'));
      for (const r of [oldOnly, newOnly, launchSide]) expect(byId(r.lines)).toEqual(expected('service'));
    } finally {
      await engine.stop();
      await tdb.close();
      for (const r of started) r.child.kill('SIGKILL');
    }
  });
});
