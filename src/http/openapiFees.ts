/** The OpenAPI paths of creator fees (docs/funding.md, "Creator fees"). */
type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json, description: string) => ({ description, content: { 'application/json': { schema } } });
const error = (description: string) => json(ref('Error'), description);
const bearer = [{ bearer: [] }];
const id = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const perMint = { type: 'object', additionalProperties: { type: 'string', pattern: '^[0-9]+$' }, description: 'base units per mint (SOL: the wrapped-SOL mint), decimal strings' };

export const feePaths: Record<string, unknown> = {
  '/api/launches/{id}/fees': {
    get: {
      summary: "What the launch's creator fees hold, read from the chain (scope launches:read)",
      security: bearer,
      parameters: [id],
      responses: {
        200: json(
          {
            type: 'object',
            properties: {
              fees: {
                type: 'object',
                properties: {
                  recipient: { type: ['string', 'null'], description: 'who a claim pays: the creator, the DAO treasury or the address of the request\'s fees.recipient' },
                  sources: {
                    type: 'array',
                    description: 'a bonding curve: its creator trading fee (kind curve, before and after graduation) and, once graduated, the fees of each DAMM v2 position the graduation gave it (kind amm-position: what claim_position_fee would pay now, SOL and the launched token); a CPMM launch has none (its pool has no creator fee)',
                    items: { type: 'object', properties: { kind: { type: 'string', enum: ['curve', 'amm-position', 'cpmm'] }, address: { type: 'string' }, claimable: perMint } },
                  },
                },
              },
            },
          },
          'The sources',
        ),
        401: error('unauthorized'),
        404: error('not_found: no such launch of this owner'),
      },
    },
  },
  '/api/launches/{id}/fees/claim': {
    post: {
      summary: "Claim every source with something claimable and pay the launch's fee recipient (scope launches:write)",
      security: bearer,
      parameters: [id, { name: 'Idempotency-Key', in: 'header', schema: { type: 'string', maxLength: 255 } }],
      requestBody: { required: false, content: { 'application/json': { schema: { type: 'object', additionalProperties: false, description: 'optional; no fields' } } } },
      responses: {
        200: json({ type: 'object', properties: { claim: { type: 'object', properties: { signatures: { type: 'array', items: { type: 'string' } }, amounts: perMint } } } }, 'Claimed and paid (empty lists: nothing to claim): SOL as SOL, a DAMM v2 position\'s token fees to the recipient\'s token account; signatures: every transaction (a position: its claim and its payment); Idempotent-Replayed: true for a replayed key'),
        400: error('invalid_request: a body field (none is taken) or the Idempotency-Key, named in details.fields'),
        401: error('unauthorized'),
        403: error('forbidden: needs launches:write'),
        404: error('not_found: no such launch of this owner'),
        409: error('conflict: the launch is not complete; claim_in_progress / idempotency_in_progress: another claim of the launch (or with this key) is running; creator_claims_fees: a creator-signed curve, whose fees only the creator\'s own signature can claim (docs/signing.md)'),
        422: error('idempotency_key_reused (another launch); claim_failed: the chain refused the claim, nothing claimed; unprocessable_entity: the recipient cannot receive the amount now'),
        503: error('the chain did not answer; the claim is recorded and the next claim request of the launch resumes it'),
      },
    },
  },
};
