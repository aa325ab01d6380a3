import { Keypair } from '@solana/web3.js';

/** A valid token-2022 launch request that needs no extra program. */
export function launchBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Demo Token',
    ticker: 'DEMO',
    totalSupply: '1000000',
    decimals: 6,
    uri: 'https://example.com/demo.json',
    tokenStandard: 'token-2022',
    creator: Keypair.generate().publicKey.toBase58(),
    allocations: { creator: 100 },
    webhookUrl: 'http://127.0.0.1:9/hooks',
    webhookSecret: 'whsec_test_0123456789abcdef',
    ...overrides,
  };
}

/** The events of a token launch without vesting, DAO or pool, in sequence order. */
export const TOKEN_LAUNCH_EVENTS = [
  'launch.queued',
  'launch.processing',
  'launch.step_complete',
  'launch.step_complete',
  'launch.step_complete',
  'launch.complete',
];
