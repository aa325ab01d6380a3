import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateSecret, signatureHeaders, verifyWebhook, WebhookVerificationError } from '../../packages/webhooks/src/index.js';

const body = JSON.stringify({ id: 'evt_1', event: 'launch.complete', timestamp: '2026-01-01T00:00:00.000Z', launchId: 'lch_1', sequence: 9, data: {} });
const now = 1_800_000_000_000;
const ts = now / 1000;

function reason(fn: () => unknown): string {
  try {
    fn();
    return 'accepted';
  } catch (error) {
    return error instanceof WebhookVerificationError ? error.reason : `other: ${String(error)}`;
  }
}

describe('verifyWebhook (packages/webhooks)', () => {
  it('accepts the Standard Webhooks published example signature', () => {
    // The example from the Standard Webhooks specification, not produced by our own signer.
    const headers = { 'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek', 'webhook-timestamp': '1614265330', 'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' };
    const v = verifyWebhook('{"test": 2432232314}', headers, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { now: 1614265330_000 });
    expect(v).toMatchObject({ scheme: 'standard', eventId: 'msg_p5jXN8AQM9LWM0D4loKWxJek', payload: { test: 2432232314 } });
    expect(reason(() => verifyWebhook('{"test": 2432232315}', headers, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { now: 1614265330_000 }))).toBe('signature_mismatch');
  });

  it('accepts a rotation list when the receiver holds either secret, and only those', () => {
    const [fresh, old] = [generateSecret(), generateSecret()];
    for (const scheme of ['service', 'standard'] as const) {
      const headers = signatureHeaders({ scheme, secrets: [fresh, old], messageId: 'evt_1', timestampSeconds: ts, body });
      expect(verifyWebhook(body, headers, fresh, { now }).scheme).toBe(scheme);
      expect(verifyWebhook(body, headers, old, { now }).payload).toMatchObject({ sequence: 9 });
      expect(verifyWebhook(Buffer.from(body), new Headers(headers), [generateSecret(), old], { now }).eventId).toBe(scheme === 'standard' ? 'evt_1' : undefined);
      expect(reason(() => verifyWebhook(body, headers, generateSecret(), { now }))).toBe('signature_mismatch');
    }
    // The service scheme's list is space-separated sha256= entries (docs/webhooks.md).
    const service = signatureHeaders({ scheme: 'service', secrets: [fresh, old], messageId: 'evt_1', timestampSeconds: ts, body });
    const expected = [fresh, old].map((s) => `sha256=${createHmac('sha256', s).update(`${ts}.${body}`).digest('hex')}`).join(' ');
    expect(service['x-service-signature']).toBe(expected);
  });

  it('names why a delivery is refused', () => {
    const secret = generateSecret();
    const headers = signatureHeaders({ scheme: 'service', secrets: [secret], messageId: 'evt_1', timestampSeconds: ts, body });
    const standard = signatureHeaders({ scheme: 'standard', secrets: [secret], messageId: 'evt_1', timestampSeconds: ts, body });
    expect(reason(() => verifyWebhook(body, headers, secret, { now: now + 301_000 }))).toBe('timestamp_too_old');
    expect(reason(() => verifyWebhook(body, standard, secret, { now: now + 301_000 }))).toBe('timestamp_too_old');
    expect(reason(() => verifyWebhook(body, headers, secret, { now: now - 301_000 }))).toBe('timestamp_too_new');
    expect(reason(() => verifyWebhook(body, headers, secret, { now: new Date(now + 299_000) }))).toBe('accepted');
    expect(reason(() => verifyWebhook(body, headers, secret, { now: now + 60_000, toleranceSeconds: 30 }))).toBe('timestamp_too_old');
    expect(reason(() => verifyWebhook(body, {}, secret, { now }))).toBe('missing_header');
    expect(reason(() => verifyWebhook(body, { ...standard, 'webhook-id': undefined }, secret, { now }))).toBe('missing_header');
    expect(reason(() => verifyWebhook(body, { ...headers, 'x-service-signature': 'sha256=abc' }, secret, { now }))).toBe('malformed_signature');
    expect(reason(() => verifyWebhook(body, { ...standard, 'webhook-signature': 'v2,abc' }, secret, { now }))).toBe('malformed_signature');
    expect(reason(() => verifyWebhook(body, { ...headers, 'x-service-timestamp': 'soon' }, secret, { now }))).toBe('malformed_timestamp');
    expect(reason(() => verifyWebhook(body, headers, [], { now }))).toBe('invalid_secret');
    expect(reason(() => verifyWebhook(body, standard, 'whsec_not base64!', { now }))).toBe('invalid_secret');
    const notJson = signatureHeaders({ scheme: 'service', secrets: [secret], messageId: 'x', timestampSeconds: ts, body: 'not json' });
    expect(reason(() => verifyWebhook('not json', notJson, secret, { now }))).toBe('malformed_body');
    const error = (() => {
      try {
        verifyWebhook(body, headers, 'whsec_wrong', { now });
      } catch (e) {
        return e as WebhookVerificationError;
      }
    })();
    expect(error).toBeInstanceOf(Error);
    expect({ name: error?.name, code: error?.code }).toEqual({ name: 'WebhookVerificationError', code: 'signature_mismatch' });
  });

  it('issues secrets as whsec_ and base64 of at least 24 random bytes', () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    expect(generateSecret()).not.toBe(secret);
  });
});
