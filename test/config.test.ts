import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { parseDuration } from '../src/config/duration.js';
import { createService } from '../src/app/service.js';
import { systemClock } from '../src/lib/clock.js';
import { silentLogger } from '../src/lib/logger.js';

const dir = mkdtempSync(join(tmpdir(), 'launch-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const KEY = Buffer.alloc(32, 1).toString('base64');

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig({ DATA_DIR: dir, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('config was accepted');
}

describe('configuration', () => {
  it('runs on defaults: port 8080, embedded chain, the seed schedule and breaker, a generated secret key', () => {
    const config = loadConfig({ DATA_DIR: dir });
    expect(config.port).toBe(8080);
    expect(config.chain.mode).toBe('embedded');
    expect(config.webhooks.retrySchedule).toEqual([0, 30_000, 120_000, 600_000, 3_600_000]);
    expect(config.breaker).toEqual({ failureThreshold: 3, resetTimeoutMs: 300_000 });
    expect(config.secretKey).toHaveLength(32);
    expect(loadConfig({ DATA_DIR: dir }).secretKey.equals(config.secretKey)).toBe(true);
  });

  it('binds to 127.0.0.1 by default outside production and to every interface in production', () => {
    expect(loadConfig({ DATA_DIR: dir }).host).toBe('127.0.0.1');
    expect(loadConfig({ DATA_DIR: dir, HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadConfig({ DATA_DIR: dir, NODE_ENV: 'production', SECRET_KEY: KEY, CHAIN: 'embedded' }).host).toBe('0.0.0.0');
  });

  it('names the bad variable', () => {
    expect(refusal({ PORT: '99999' }).variable).toBe('PORT');
    expect(refusal({ WEBHOOK_RETRY_SCHEDULE: '0,30s,soon' }).variable).toBe('WEBHOOK_RETRY_SCHEDULE');
    expect(refusal({ BREAKER_RESET_TIMEOUT: '5 minutes' }).variable).toBe('BREAKER_RESET_TIMEOUT');
    expect(refusal({ SECRET_KEY: 'c2hvcnQ=' }).variable).toBe('SECRET_KEY');
    expect(refusal({ NODE_ENV: 'production' }).variable).toBe('SECRET_KEY');
    expect(refusal({ NODE_ENV: 'production', SECRET_KEY: KEY, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }).variable).toBe('WEBHOOK_ALLOW_PRIVATE_NETWORKS');
    expect(refusal({ SOLANA_RPC_URL: 'http://127.0.0.1:8899' }).variable).toBe('SOLANA_PAYER_KEYPAIR');
    expect(refusal({ LOG_LEVEL: 'loud' }).variable).toBe('LOG_LEVEL');
    expect(refusal({ CHAIN_PROGRAMS_DIR: join(dir, 'absent') }).variable).toBe('CHAIN_PROGRAMS_DIR');
  });

  it('serves the embedded chain on 127.0.0.1:8899 outside production, and refuses it in production unless CHAIN=embedded', () => {
    expect(loadConfig({ DATA_DIR: dir }).chain.rpcServer).toEqual({ host: '127.0.0.1', port: 8899, fallback: true });
    expect(loadConfig({ DATA_DIR: dir, CHAIN_RPC_PORT: 'off' }).chain.rpcServer).toBeUndefined();
    expect(loadConfig({ DATA_DIR: dir, CHAIN_RPC_PORT: '0', CHAIN_RPC_HOST: '0.0.0.0' }).chain.rpcServer).toEqual({ host: '0.0.0.0', port: 0 });
    expect(refusal({ CHAIN_RPC_PORT: 'eighty' }).variable).toBe('CHAIN_RPC_PORT');
    expect(refusal({ NODE_ENV: 'production', SECRET_KEY: KEY }).variable).toBe('CHAIN');
    expect(refusal({ CHAIN: 'litesvm' }).variable).toBe('CHAIN');
    expect(refusal({ CHAIN: 'rpc' }).variable).toBe('SOLANA_RPC_URL');
    expect(refusal({ CHAIN_CLONE_FROM: 'mainnet' }).variable).toBe('CHAIN_CLONE_FROM');
    expect(loadConfig({ DATA_DIR: dir, CHAIN_CLONE_FROM: 'https://api.devnet.solana.com' }).chain.cloneFrom).toBe('https://api.devnet.solana.com');
    // Unset: mainnet-beta in development only; `off` disables; never under test, in production, or with SOLANA_RPC_URL.
    expect(loadConfig({ DATA_DIR: dir }).chain.cloneFrom).toBe('https://api.mainnet-beta.solana.com');
    expect(loadConfig({ DATA_DIR: dir, NODE_ENV: 'development' }).chain.cloneFrom).toBe('https://api.mainnet-beta.solana.com');
    expect(loadConfig({ DATA_DIR: dir, CHAIN_CLONE_FROM: 'off' }).chain.cloneFrom).toBeUndefined();
    expect(loadConfig({ DATA_DIR: dir, NODE_ENV: 'test' }).chain.cloneFrom).toBeUndefined();
    expect(loadConfig({ DATA_DIR: dir, NODE_ENV: 'production', SECRET_KEY: KEY, CHAIN: 'embedded' }).chain.cloneFrom).toBeUndefined();
    expect(loadConfig({ DATA_DIR: dir, SOLANA_RPC_URL: 'https://a.example', SOLANA_PAYER_KEYPAIR: '/x' }).chain.cloneFrom).toBeUndefined();
    const production = loadConfig({ DATA_DIR: dir, NODE_ENV: 'production', SECRET_KEY: KEY, CHAIN: 'embedded' });
    expect(production.chain.mode).toBe('embedded');
    expect(production.chain.rpcServer).toBeUndefined();
    expect(refusal({ NODE_ENV: 'production', SECRET_KEY: KEY, CHAIN: 'embedded', CHAIN_RPC_PORT: '8899' }).variable).toBe('CHAIN_RPC_PORT');
    expect(loadConfig({ DATA_DIR: dir }).watcher.ttlMs).toBe(365 * 86_400_000);
    expect(loadConfig({ DATA_DIR: dir, WATCH_TTL: '30d' }).watcher.ttlMs).toBe(30 * 86_400_000);
    // History pages: `getSignaturesForAddress` takes 1..1000.
    expect(loadConfig({ DATA_DIR: dir }).watcher.pageSize).toBe(1000);
    expect(loadConfig({ DATA_DIR: dir, WATCH_PAGE_SIZE: '50' }).watcher.pageSize).toBe(50);
    expect(refusal({ WATCH_PAGE_SIZE: '1001' }).variable).toBe('WATCH_PAGE_SIZE');
    expect(refusal({ WATCH_PAGE_SIZE: '0' }).variable).toBe('WATCH_PAGE_SIZE');
  });

  it('parses durations in ms, s, m, h and plain milliseconds', () => {
    expect([parseDuration('500ms'), parseDuration('30s'), parseDuration('2m'), parseDuration('1h'), parseDuration('250')]).toEqual([500, 30_000, 120_000, 3_600_000, 250]);
    expect(parseDuration('1d')).toBe(86_400_000);
    expect(parseDuration('1w')).toBeUndefined();
    expect(loadConfig({ DATA_DIR: dir }).endpoints.disableAfterMs).toBe(5 * 86_400_000);
    expect(loadConfig({ DATA_DIR: dir, ENDPOINT_DISABLE_AFTER: '12h' }).endpoints.disableAfterMs).toBe(12 * 3600_000);
    expect(refusal({ ENDPOINT_DISABLE_AFTER: 'soon' }).variable).toBe('ENDPOINT_DISABLE_AFTER');
  });

  it('reads the runner lease (RUNNER_LEASE_MS): 60 s by default, at least 2 s', () => {
    expect(loadConfig({ DATA_DIR: dir }).runner.leaseMs).toBe(60_000);
    expect(loadConfig({ DATA_DIR: dir, RUNNER_LEASE_MS: '2s' }).runner.leaseMs).toBe(2000);
    expect(loadConfig({ DATA_DIR: dir, RUNNER_LEASE_MS: '90000' }).runner.leaseMs).toBe(90_000);
    expect(refusal({ RUNNER_LEASE_MS: '500ms' }).variable).toBe('RUNNER_LEASE_MS');
    expect(refusal({ RUNNER_LEASE_MS: 'long' }).variable).toBe('RUNNER_LEASE_MS');
  });

  it('reads PRIORITY_FEE_MAX_MICROLAMPORTS: unset by default, an integer cap otherwise', () => {
    expect(loadConfig({ DATA_DIR: dir }).chain.priorityFeeMaxMicroLamports).toBeUndefined();
    expect(loadConfig({ DATA_DIR: dir, PRIORITY_FEE_MAX_MICROLAMPORTS: '50000' }).chain.priorityFeeMaxMicroLamports).toBe(50_000);
    expect(refusal({ PRIORITY_FEE_MAX_MICROLAMPORTS: 'lots' }).variable).toBe('PRIORITY_FEE_MAX_MICROLAMPORTS');
  });

  it('reads a comma-separated SOLANA_RPC_URL, refusing a bad entry or a host named twice', () => {
    expect(refusal({ SOLANA_RPC_URL: 'https://a.example,ftp://b.example', SOLANA_PAYER_KEYPAIR: '/x' }).variable).toBe('SOLANA_RPC_URL');
    expect(refusal({ SOLANA_RPC_URL: 'https://a.example,https://a.example/other', SOLANA_PAYER_KEYPAIR: '/x' }).variable).toBe('SOLANA_RPC_URL');
    expect(loadConfig({ DATA_DIR: dir, SOLANA_RPC_URL: 'https://a.example, https://b.example', SOLANA_PAYER_KEYPAIR: '/x' }).chain.mode).toBe('rpc');
  });

  it('times a short RPC read out after SOLANA_RPC_READ_TIMEOUT (2 s) and a slow request after SOLANA_RPC_TIMEOUT (10 s); an open breaker tries again after 5 s', () => {
    expect(loadConfig({ DATA_DIR: dir }).chain).toMatchObject({ rpcReadTimeoutMs: 2000, rpcTimeoutMs: 10_000, rpcBreakerResetMs: 5000 });
    expect(loadConfig({ DATA_DIR: dir, SOLANA_RPC_READ_TIMEOUT: '500ms' }).chain.rpcReadTimeoutMs).toBe(500);
    expect(refusal({ SOLANA_RPC_READ_TIMEOUT: '0s' }).variable).toBe('SOLANA_RPC_READ_TIMEOUT');
  });

  it('reads MCP_ALLOWED_ORIGINS as origins, normalized, refusing a path, another scheme or a non-URL', () => {
    expect(loadConfig({ DATA_DIR: dir }).mcpAllowedOrigins).toEqual([]);
    expect(loadConfig({ DATA_DIR: dir, MCP_ALLOWED_ORIGINS: 'https://Agents.Example.com:443/, http://localhost:6274' }).mcpAllowedOrigins).toEqual(['https://agents.example.com', 'http://localhost:6274']);
    for (const bad of ['https://a.example/app', 'ftp://a.example', 'a.example', 'https://a.example?x=1', '*']) {
      expect(refusal({ MCP_ALLOWED_ORIGINS: bad }).variable).toBe('MCP_ALLOWED_ORIGINS');
    }
  });

  it('reads LAUNCH_TRANSIENT_DEADLINE as a duration: 1 h by default, above zero', () => {
    expect(loadConfig({ DATA_DIR: dir }).runner.transientDeadlineMs).toBe(3_600_000);
    expect(loadConfig({ DATA_DIR: dir, LAUNCH_TRANSIENT_DEADLINE: '15m' }).runner.transientDeadlineMs).toBe(900_000);
    expect(loadConfig({ DATA_DIR: dir, LAUNCH_TRANSIENT_DEADLINE: '5000' }).runner.transientDeadlineMs).toBe(5000);
    expect(refusal({ LAUNCH_TRANSIENT_DEADLINE: '0s' }).variable).toBe('LAUNCH_TRANSIENT_DEADLINE');
    expect(refusal({ LAUNCH_TRANSIENT_DEADLINE: 'an hour' }).variable).toBe('LAUNCH_TRANSIENT_DEADLINE');
  });

  it('reads RETENTION (30 days by default, at least a minute) and LAUNCH_RETENTION (unset keeps launches)', () => {
    expect(loadConfig({ DATA_DIR: dir }).retention).toEqual({ periodMs: 30 * 86_400_000, launchPeriodMs: undefined });
    expect(loadConfig({ DATA_DIR: dir, RETENTION: '7d', LAUNCH_RETENTION: '365d' }).retention).toEqual({ periodMs: 7 * 86_400_000, launchPeriodMs: 365 * 86_400_000 });
    expect(refusal({ RETENTION: '30s' }).variable).toBe('RETENTION');
    expect(refusal({ LAUNCH_RETENTION: 'forever' }).variable).toBe('LAUNCH_RETENTION');
  });

  it('runs the embedded chain on its own thread only with CHAIN_THREAD=on, and reads RUNNER_CONCURRENCY', () => {
    const defaults = loadConfig({ DATA_DIR: dir, SECRET_KEY: KEY });
    expect(defaults.chain.thread).toBe(false);
    expect(defaults.runner.concurrency).toBeUndefined();
    expect(loadConfig({ DATA_DIR: dir, SECRET_KEY: KEY, CHAIN_THREAD: 'on' }).chain.thread).toBe(true);
    expect(loadConfig({ DATA_DIR: dir, SECRET_KEY: KEY, RUNNER_CONCURRENCY: '6' }).runner.concurrency).toBe(6);
    expect(refusal({ SECRET_KEY: KEY, CHAIN_THREAD: 'yes' }).variable).toBe('CHAIN_THREAD');
    expect(refusal({ SECRET_KEY: KEY, RUNNER_CONCURRENCY: '0' }).variable).toBe('RUNNER_CONCURRENCY');
  });

  it('runs on PostgreSQL when DATABASE_URL is a postgres:// URL (DATABASE_POOL_SIZE connections, 10 by default; sessions idle in a transaction ended after DATABASE_IDLE_TRANSACTION_TIMEOUT, 10 s by default); a path stays SQLite', () => {
    expect(loadConfig({ DATA_DIR: dir }).postgres).toBeUndefined();
    expect(loadConfig({ DATA_DIR: dir }).databasePath).toBe(join(dir, 'launch-service.sqlite'));
    expect(loadConfig({ DATA_DIR: dir, DATABASE_URL: join(dir, 'other.sqlite') }).postgres).toBeUndefined();
    expect(loadConfig({ DATA_DIR: dir, DATABASE_URL: 'postgres://svc@db.internal:5432/launches' }).postgres).toEqual({ url: 'postgres://svc@db.internal:5432/launches', poolSize: 10, idleTransactionTimeoutMs: 10_000 });
    expect(loadConfig({ DATA_DIR: dir, DATABASE_URL: 'postgresql://svc@db/launches', DATABASE_POOL_SIZE: '4' }).postgres?.poolSize).toBe(4);
    expect(refusal({ DATABASE_URL: 'postgres://svc@db/launches', DATABASE_POOL_SIZE: '0' }).variable).toBe('DATABASE_POOL_SIZE');
    expect(loadConfig({ DATA_DIR: dir, DATABASE_URL: 'postgres://svc@db/launches', DATABASE_IDLE_TRANSACTION_TIMEOUT: '30s' }).postgres?.idleTransactionTimeoutMs).toBe(30_000);
    expect(loadConfig({ DATA_DIR: dir, DATABASE_URL: 'postgres://svc@db/launches', DATABASE_IDLE_TRANSACTION_TIMEOUT: '0' }).postgres?.idleTransactionTimeoutMs).toBe(0);
    expect(refusal({ DATABASE_URL: 'postgres://svc@db/launches', DATABASE_IDLE_TRANSACTION_TIMEOUT: 'soon' }).variable).toBe('DATABASE_IDLE_TRANSACTION_TIMEOUT');
    expect(refusal({ DATABASE_URL: 'postgres://svc@db/launches', DATABASE_IDLE_TRANSACTION_TIMEOUT: '30d' }).variable).toBe('DATABASE_IDLE_TRANSACTION_TIMEOUT');
  });

  it('refuses the in-process embedded chain on PostgreSQL with one line saying how to run a shared chain', async () => {
    const config = loadConfig({ DATA_DIR: dir, DATABASE_URL: 'postgres://svc@127.0.0.1:1/never-opened' });
    const refused = await createService(config, { logger: silentLogger(), clock: systemClock }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).variable).toBe('DATABASE_URL');
    expect((refused as ConfigError).message).toContain('npm run chain');
    expect((refused as ConfigError).message).toContain('SOLANA_RPC_URL=http://127.0.0.1:8899');
    expect((refused as ConfigError).message).not.toContain('\n');
  });
});
