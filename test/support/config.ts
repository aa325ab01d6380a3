import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config/config.js';

/**
 * The one test configuration: the service's own defaults (loadConfig) for a fresh data directory,
 * silent logs, development mode and a random SECRET_KEY; `env` overrides any variable. Programs are
 * never fetched from a cluster (CHAIN_CLONE_FROM off) unless a test names one.
 */
export function testConfig(env: Record<string, string> = {}): { config: Config; dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'launch-svc-'));
  const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', SECRET_KEY: randomBytes(32).toString('base64'), CHAIN_CLONE_FROM: 'off', ...env });
  return { config, dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
