import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    // Every process a test starts inherits this: no test fetches programs from a public cluster.
    env: { CHAIN_CLONE_FROM: 'off' },
  },
});
