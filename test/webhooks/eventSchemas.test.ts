import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/http/openapi.js';
import { checkEnvelope, EVENT_DATA_SCHEMAS } from '../../src/webhooks/eventSchemas.js';
import { sampleEnvelope, WEBHOOK_EVENT_KINDS } from '../../src/webhooks/sampleEvents.js';
import { launchBody, TOKEN_LAUNCH_EVENTS } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

type Json = Record<string, any>;

describe('webhook event payloads: OpenAPI webhooks section and the schemas behind it', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t?.close());

  it('describes every event kind with its envelope and data fields', () => {
    const doc = buildOpenApi('1.0.0') as { webhooks: Record<string, Json> };
    for (const kind of [...WEBHOOK_EVENT_KINDS, 'fees.claimed']) {
      const schema = doc.webhooks[kind]?.post?.requestBody?.content?.['application/json']?.schema as Json | undefined;
      expect(schema, kind).toBeDefined();
      expect(schema!.required).toEqual(expect.arrayContaining(['id', 'event', 'timestamp', 'launchId', 'sequence', 'data']));
      expect(schema!.properties.event.const).toBe(kind);
    }
    const complete = doc.webhooks['launch.complete']!.post.requestBody.content['application/json'].schema.properties.data;
    expect(complete.required).toEqual(expect.arrayContaining(['mint', 'metadata', 'vestingContract', 'dao', 'pool', 'transactions']));
    const failed = doc.webhooks['launch.failed']!.post.requestBody.content['application/json'].schema.properties.data;
    expect(failed.properties.error.required).toEqual(['code', 'message', 'step']);
    expect(Object.keys(doc.webhooks).sort()).toEqual(Object.keys(EVENT_DATA_SCHEMAS).sort());
  });

  it('the test route samples and the events a real launch records match the documented schemas', async () => {
    for (const kind of WEBHOOK_EVENT_KINDS) expect(checkEnvelope(sampleEnvelope(kind, Date.now())), kind).toEqual({ ok: true });

    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const res = await t.request('/api/launches', { method: 'POST', key, json: launchBody() });
    expect(res.status).toBe(202);
    const { launch } = (await res.json()) as { launch: { id: string } };
    await t.service.runner.drain();
    const events = await t.service.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', launch.id).orderBy('sequence').execute();
    expect(events.map((e) => e.event)).toEqual(TOKEN_LAUNCH_EVENTS);
    for (const e of events) expect(checkEnvelope(JSON.parse(e.body)), e.event).toEqual({ ok: true });
    // The check can fail: a launch.complete without its addresses does not pass.
    const bad = JSON.parse(events.at(-1)!.body) as Json;
    delete bad.data.mint;
    expect(checkEnvelope(bad)).toMatchObject({ ok: false, kind: 'launch.complete' });
  });
});
