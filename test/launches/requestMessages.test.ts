import { describe, expect, it } from 'vitest';
import { parseLaunchRequest } from '../../src/launches/request.js';
import { launchBody } from '../support/fixtures.js';

const errorsOf = (body: Record<string, unknown>) => {
  const parsed = parseLaunchRequest(body, { requireHttps: false });
  return parsed.ok ? [] : parsed.errors;
};

describe('launch request messages are plain sentences', () => {
  it('says a missing field is required', () => {
    const { creator: _omitted, ...body } = launchBody();
    expect(errorsOf(body)).toEqual([{ field: 'creator', message: 'is required' }]);
  });

  it('turns zod range, option and whole-number defaults into sentences without zod jargon', () => {
    const errors = errorsOf(
      launchBody({ decimals: 12, ticker: '', tokenStandard: 'spl', webhookSecret: 'x'.repeat(300), allocations: { creator: 99.5, treasury: 0.5 } }),
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        { field: 'decimals', message: 'must be at most 9' },
        { field: 'ticker', message: 'must be at least 1 character long' },
        { field: 'tokenStandard', message: 'must be one of spl-token, token-2022' },
        { field: 'webhookSecret', message: 'must be at most 256 characters long' },
        { field: 'allocations.creator', message: 'must be a whole number' },
      ]),
    );
    for (const { message } of errors) expect(message).not.toMatch(/Too big|Too small|Invalid|expected|<=|>=/);
  });

  it('keeps the messages the schema spells out', () => {
    expect(errorsOf(launchBody({ webhookSecret: 'short' }))).toEqual([{ field: 'webhookSecret', message: 'must be at least 16 characters' }]);
  });
});
