import { loadConfig, type Config } from '../../src/config/config.js';

/**
 * The service's configuration for a benchmark: its defaults (so the numbers describe what ships),
 * silent logs, a rate limit that never bites, private loopback receivers allowed.
 */
export function benchConfig(dataDir: string, secretKey: Buffer, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    NODE_ENV: 'development',
    CHAIN_CLONE_FROM: 'off',
    SECRET_KEY: secretKey.toString('base64'),
    RATE_LIMIT_PER_MINUTE: '1000000',
    // One owner sends every burst: its in-flight bound is not what the benches measure.
    MAX_LAUNCHES_IN_FLIGHT_PER_OWNER: '1000000',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    ...env,
  });
}
