import { describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/http/openapi.js';

describe('GET /api/openapi', () => {
  it('describes every route of the contract, with the launch request schema generated from its validator', () => {
    const doc = buildOpenApi('1.2.3') as { openapi: string; paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, any> } };
    expect(doc.openapi).toBe('3.1.0');
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    for (const route of [
      'GET /api/health',
      'HEAD /api/health',
      'POST /api/webhooks/test',
      'POST /api/launches',
      'GET /api/launches',
      'GET /api/launches/{id}',
      'GET /api/launches/{id}/deliveries',
      'GET /api/launches/{id}/signing',
      'POST /api/launches/{id}/signatures',
      'POST /api/deliveries/{id}/redeliver',
      'GET /api/dead-letters',
      'POST /api/dead-letters/{id}/retry',
      'POST /api/dead-letters/{id}/resolve',
      'GET /api/openapi',
      'PATCH /api/launches/{id}',
      'GET /api/launches/{id}/events',
      'GET /api/events/stream',
      'POST /api/webhook-endpoints',
      'GET /api/webhook-endpoints',
      'GET /api/webhook-endpoints/{id}',
      'PATCH /api/webhook-endpoints/{id}',
      'DELETE /api/webhook-endpoints/{id}',
      'POST /api/webhook-endpoints/{id}/rotate-secret',
      'POST /api/webhook-endpoints/{id}/recover',
      'GET /api/webhook-endpoints/{id}/stats',
      'POST /api/launches/quote',
      'GET /api/funding',
      'GET /api/funding/ledger',
      'PUT /api/funding/{owner}/limits',
      'POST /api/funding/withdraw',
      'GET /api/owners/{owner}/bounds',
      'PUT /api/owners/{owner}/bounds',
    ]) {
      expect(routes).toContain(route);
    }
    const request = doc.components.schemas.LaunchRequest;
    expect(request.required).toEqual(expect.arrayContaining(['name', 'ticker', 'totalSupply', 'creator', 'webhookUrl', 'webhookSecret']));
    expect(request.properties.tokenStandard.enum).toEqual(['spl-token', 'token-2022']);
    expect(request.additionalProperties).toBe(false);
  });
});
