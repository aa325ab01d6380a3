import { TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { afterEach, describe, expect, it } from 'vitest';
import { ataBalance, readMintBack } from '../chain/support/readBack.js';
import { launchBody, TOKEN_LAUNCH_EVENTS } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('launch runner on the embedded chain', () => {
  it('runs a token-2022 launch to complete, emitting queued → processing → each step → complete in sequence', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const body = launchBody({ totalSupply: '1000000', decimals: 6, revokeMintAuthority: true });
    const res = await t.request('/api/launches', { method: 'POST', key, json: body });
    const { launch } = (await res.json()) as { launch: { id: string } };
    expect(await t.service.runner.drain()).toBe(1);

    const got = (await (await t.request(`/api/launches/${launch.id}`, { key })).json()) as { launch: Record<string, any> };
    expect(got.launch.status).toBe('complete');
    expect(got.launch.steps.map((s: any) => s.status)).toEqual(['complete', 'complete', 'complete']);
    expect(got.launch.steps[0].transactions[0].signature).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    const mint = got.launch.results.mint as string;

    const events = await t.service.db.selectFrom('outbox_events').select(['event', 'sequence', 'body']).where('launch_id', '=', launch.id).orderBy('sequence').execute();
    expect(events.map((e) => e.event)).toEqual(TOKEN_LAUNCH_EVENTS);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    const complete = JSON.parse(events[5]!.body) as { data: Record<string, any> };
    expect(complete.data.mint).toBe(mint);
    expect(complete.data.metadata).toBe(mint);
    expect(complete.data.transactions.length).toBeGreaterThanOrEqual(2);
    expect(Object.keys(complete.data).sort()).toEqual(['dao', 'metadata', 'mint', 'pool', 'transactions', 'vestingContract']);

    // Read the chain back: token-2022 mint, full supply with the creator, authority revoked.
    const onChain = await readMintBack(t.service.chain, mint);
    expect(onChain.owner.equals(TOKEN_2022_PROGRAM_ID)).toBe(true);
    expect(onChain.mint.supply).toBe(1_000_000n * 10n ** 6n);
    expect(onChain.mint.decimals).toBe(6);
    expect(onChain.mint.mintAuthority).toBeNull();
    expect(await ataBalance(t.service.chain, mint, body.creator as string, TOKEN_2022_PROGRAM_ID)).toBe(1_000_000n * 10n ** 6n);
  });
});

describe('a launch seen by its webhook receiver', () => {
  it('receives queued → processing → each step → complete, in sequence, each signed with the launch secret', async () => {
    const { createServer } = await import('node:http');
    const { createHmac, timingSafeEqual } = await import('node:crypto');
    const secret = 'whsec_receiver_secret_42';
    const received: Array<{ event: string; sequence: number; verified: boolean }> = [];
    let done: () => void = () => undefined;
    const complete = new Promise<void>((resolve) => (done = resolve));
    // An independent receiver: its own HMAC check of `<timestamp>.<raw body>`.
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const ts = String(req.headers['x-service-timestamp']);
        const expected = `sha256=${createHmac('sha256', secret).update(`${ts}.${raw}`).digest('hex')}`;
        const given = String(req.headers['x-service-signature']);
        const verified = given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected)) && Math.abs(Date.now() / 1000 - Number(ts)) <= 300;
        const envelope = JSON.parse(raw) as { event: string; sequence: number };
        received.push({ event: envelope.event, sequence: envelope.sequence, verified });
        res.writeHead(verified ? 200 : 401).end();
        if (envelope.event === 'launch.complete') done();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      t = await startTestService();
      t.service.start();
      const key = await t.key('acme', ['launches:write', 'launches:read']);
      const res = await t.request('/api/launches', { method: 'POST', key, json: launchBody({ webhookUrl: `http://127.0.0.1:${port}/hook`, webhookSecret: secret }) });
      expect(res.status).toBe(202);
      await complete;
      await new Promise((r) => setTimeout(r, 50));
      const ordered = [...received].sort((a, b) => a.sequence - b.sequence);
      expect(ordered.map((r) => r.event)).toEqual(TOKEN_LAUNCH_EVENTS);
      expect(ordered.map((r) => r.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(received.every((r) => r.verified)).toBe(true);
    } finally {
      server.close();
    }
  });
});
