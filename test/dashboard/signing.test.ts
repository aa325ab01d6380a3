import { PublicKey } from '@solana/web3.js';
import { describe, expect, it } from 'vitest';
import { launchBody } from '../support/fixtures.js';
import { startTestService } from '../support/service.js';
import { creatorWallet, signAll } from '../signing/support/creator.js';
import { signIn } from './support.js';

// docs/signing.md: the dashboard shows creator-signed launches waiting for the creator (server-rendered pages).
describe('dashboard: launches waiting for signatures', () => {
  it('counts them on the overview, lists them under their filter and says on the launch what is signed and until when', async () => {
    const t = await startTestService();
    try {
      const key = await t.key('acme', ['launches:write', 'launches:read']);
      const creator = creatorWallet();
      await t.service.chain.requestAirdrop!(new PublicKey(creator.address), 1_000_000_000n);
      const waiting = await t.createLaunch(key, launchBody({ creator: creator.address, signing: 'creator' }));
      const funded = await t.createLaunch(key, launchBody());
      const { cookie } = await signIn(t, key);
      const page = async (path: string) => {
        const res = await t.request(path, { headers: { cookie } });
        expect(res.status).toBe(200);
        return res.text();
      };

      expect(await page('/dashboard')).toMatch(/data-count="launches-awaiting_signatures">1</);
      const listed = await page('/dashboard/launches?status=awaiting_signatures');
      expect(listed).toContain(`/dashboard/launches/${waiting}`);
      expect(listed).not.toContain(`/dashboard/launches/${funded}`);
      expect(listed).toContain('<option value="awaiting_signatures" selected');

      const deadline = new Date(Number((await t.service.db.selectFrom('launch_signing').select('deadline_at').executeTakeFirstOrThrow()).deadline_at)).toISOString().replace('T', ' ').slice(0, 19);
      const signingField = (html: string) => /<div data-field="signing">(.*?)<\/div>\s*<\/dd>/s.exec(html)?.[1] ?? '';
      const before = signingField(await page(`/dashboard/launches/${waiting}`));
      expect(before).toContain('creator-signed: 0 of 1 signed');
      expect(before).toContain(`waiting for the creator&#39;s signatures (setup round) until ${deadline}`);
      expect(before).toContain(creator.address);

      // The setup signed: the launch round is offered; every signature in: queued, no longer waiting.
      await signAll(t, key, waiting, creator);
      expect(signingField(await page(`/dashboard/launches/${waiting}`))).toContain('1 of 4 signed<strong> · waiting for the creator&#39;s signatures (launch round)');
      await signAll(t, key, waiting, creator);
      const after = signingField(await page(`/dashboard/launches/${waiting}`));
      expect(after).toContain('creator-signed: 4 of 4 signed');
      expect(after).not.toContain('waiting');
      expect(await page('/dashboard')).toMatch(/data-count="launches-awaiting_signatures">0</);
      expect(signingField(await page(`/dashboard/launches/${funded}`))).toBe('');
    } finally {
      await t.close();
    }
  });
});
