import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { parseDuration, parseDurationList } from './duration.js';
import { parseTrustProxy, type TrustProxy } from './trustProxy.js';

export type ChainMode = 'embedded' | 'rpc';

/** Tracing's settings (src/lib/tracing.ts takes them as they are); see {@link tracingVar}. */
export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL; default http/protobuf. */
  protocol: 'http/protobuf' | 'http/json';
  /** Where spans are posted: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  url: string;
  /** OTEL_SERVICE_NAME (default launch-service); OTEL_RESOURCE_ATTRIBUTES are added by the SDK. */
  serviceName: string;
}

/** Validated service configuration (docs/configuration.md). Built once at start by {@link loadConfig}. */
export interface Config {
  nodeEnv: string;
  production: boolean;
  port: number;
  host: string;
  logLevel: string;
  logPretty: boolean;
  dataDir: string;
  /** The SQLite file (the default store); unused when `postgres` is set. */
  databasePath: string;
  /** DATABASE_URL=postgres://…: the PostgreSQL server the service runs on instead of SQLite (docs/architecture.md, SQLite and PostgreSQL). */
  postgres: { url: string; poolSize: number; idleTransactionTimeoutMs: number } | undefined;
  secretKey: Buffer;
  /** Tracing over OTLP/HTTP (the standard OTEL_* variables, see {@link tracingVar}); undefined: off, the SDK not loaded. */
  tracing: TracingConfig | undefined;
  /** SECRET_KEY_PREVIOUS: the key SECRET_KEY replaced; funding wallets sealed under it are re-sealed at start. */
  previousSecretKey: Buffer | undefined;
  chain: {
    mode: ChainMode;
    /** SOLANA_RPC_URL as given: one URL or a comma-separated list, primary first. */
    rpcUrl: string | undefined;
    payerKeypairPath: string | undefined;
    /** SOLANA_RPC_TIMEOUT: how long a slow RPC request (a send, a simulation, a history page) may take before it counts as lost. */
    rpcTimeoutMs: number;
    /** SOLANA_RPC_READ_TIMEOUT: the same for every other request, a short read; a lost one is tried again at once. */
    rpcReadTimeoutMs: number;
    /** SOLANA_RPC_BREAKER_RESET: how long an RPC endpoint's open breaker refuses calls before a trial one. */
    rpcBreakerResetMs: number;
    programsDir: string | undefined;
    priorityFeeMicroLamports: number;
    /** PRIORITY_FEE_MAX_MICROLAMPORTS (RPC): the price comes from the network's recent fees, capped here; unit limits from simulation. */
    priorityFeeMaxMicroLamports: number | undefined;
    computeUnitLimit: number | undefined;
    /** Where the embedded chain serves JSON-RPC (docs/chain.md); undefined: not served (`off`, production, RPC mode). */
    /** `fallback`: the port was not chosen (CHAIN_RPC_PORT unset), so a taken default gives way to a free one. */
    rpcServer: { host: string; port: number; fallback?: boolean } | undefined;
    /** CHAIN_CLONE_FROM: a cluster the embedded chain fetches the programs it lacks from (default mainnet-beta in development; `off`). */
    cloneFrom: string | undefined;
    /**
     * CHAIN_THREAD=on: the embedded chain and the launch steps' chain work (building, signing,
     * executing, committing) run on a worker thread of their own, so they never hold the event loop
     * that serves the API, health and the dispatcher; it costs a second V8 isolate with the chain's
     * libraries (~110 MB). `off` (the default): all on the main thread.
     */
    thread: boolean;
  };
  /**
   * The launch runner: how long a claimed launch stays leased without a heartbeat (another runner may
   * resume it after), and RUNNER_CONCURRENCY, the launches it runs at once (undefined: 16 against
   * an RPC cluster, where a launch waits on the network; 4 with the embedded chain on its own thread,
   * else 2). LAUNCH_TRANSIENT_DEADLINE: how long a step may wait on
   * transient chain faults before its launch fails. SIGNING_DEADLINE: how long a creator-signed
   * launch waits for its signatures before it fails `signature_timeout`.
   */
  runner: { leaseMs: number; concurrency: number | undefined; transientDeadlineMs: number; signingDeadlineMs: number };
  /** The chain watcher (docs/watcher.md). */
  watcher: { ttlMs: number; pollIntervalMs: number; maxIntervalMs: number; pageSize: number; autoClaimIntervalMs: number };
  /**
   * RETENTION: how long settled events, ended watches, closed dead letters, expired sessions and
   * rate-limit windows are kept; LAUNCH_RETENTION: ended launches, undefined (unset) keeps them.
   */
  retention: { periodMs: number; launchPeriodMs: number | undefined };
  webhooks: {
    retrySchedule: number[];
    timeoutMs: number;
    allowPrivateNetworks: boolean;
    testSecret: string;
    maxInFlight: number;
    maxInFlightPerHost: number;
    /** WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT; unset: the per-host cap. */
    maxInFlightPerEndpoint?: number;
    /** WEBHOOK_MAX_IN_FLIGHT_PER_OWNER; unset: half of WEBHOOK_MAX_IN_FLIGHT. */
    maxInFlightPerOwner?: number;
    /** WEBHOOK_PREFETCH_PER_HOST: deliveries per host leased beyond its in-flight cap, to wait in the local queue; unset: the per-host cap. */
    prefetchPerHost?: number;
    leaseMs: number;
    pollIntervalMs: number;
  };
  breaker: { failureThreshold: number; resetTimeoutMs: number };
  /**
   * Owners' funding wallets (docs/funding.md): FUNDING_DEV_AIRDROP, the SOL a new wallet gets from
   * the chain's faucet outside production (default 100, 0 off; never in production).
   */
  funding: {
    devAirdropLamports: number;
    /** LAUNCH_FEE_LAMPORTS to LAUNCH_FEE_RECIPIENT: what every new launch pays the operator in its first transaction. */
    operatorFee: { lamports: number; recipient: string } | undefined;
  };
  /** Owner webhook endpoints (docs/webhooks.md): disabled after failing continuously this long. */
  endpoints: { disableAfterMs: number };
  /** Per-owner bounds (docs/architecture.md, "Limits and fairness"); over one: 409 limit_reached. */
  ownerLimits: OwnerLimits;
  rateLimitPerMinute: number;
  bodyLimitBytes: number;
  /** MCP_ALLOWED_ORIGINS: browser origins `/mcp` accepts besides the service's own loopback origin (docs/mcp.md). */
  mcpAllowedOrigins: string[];
  /** Bound on receiving a request's headers and body, and open connections per client address (0: no cap). */
  http: { requestTimeoutMs: number; maxConnectionsPerClient: number; trustProxy: TrustProxy };
  /** EVENT_STREAMS_PER_KEY, EVENT_STREAMS_PER_OWNER, EVENT_STREAMS_MAX: open event streams allowed in this process. */
  eventStreams: { perKey: number; perOwner: number; max: number };
  healthCheckTimeoutMs: number;
  /** How long one health report is shared between requests (0: every request runs the checks). */
  healthCacheMs: number;
  version: string;
  /** `/metrics`, the dashboard (README.md, Operations). */
  ops: OpsConfig;
}

/** What one owner may hold at once; each is refused past its bound with nothing created. */
export interface OwnerLimits {
  /** MAX_ENDPOINTS_PER_OWNER: webhook endpoints of one owner. */
  endpoints: number;
  /** MAX_LAUNCHES_IN_FLIGHT_PER_OWNER: launches of one owner queued or processing. */
  launchesInFlight: number;
  /** MAX_REDELIVERIES_PER_DELIVERY: fresh attempt series of one event to one destination after the first. */
  redeliveries: number;
}

/** The bounds when nothing is set (docs/configuration.md). */
export const DEFAULT_OWNER_LIMITS: Readonly<OwnerLimits> = { endpoints: 20, launchesInFlight: 50, redeliveries: 20 };

/** The most each bound may be set to, by its environment variable or for one owner by an admin. */
export const OWNER_LIMIT_CEILINGS: Readonly<OwnerLimits> = { endpoints: 100_000, launchesInFlight: 1_000_000, redeliveries: 10_000 };

export interface OpsConfig {
  /** When set, `GET /metrics` needs `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  /** How long a dashboard sign-in lasts. */
  dashboardSessionTtlMs: number;
  /** DASHBOARD_SIGN_IN_PER_MINUTE: failed sign-in attempts per client address per minute. */
  dashboardSignInPerMinute: number;
  /** `cluster` parameter of explorer links on the dashboard (`mainnet-beta`, `devnet`, `testnet`, `custom`). */
  explorerCluster: string;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`Invalid configuration: ${variable} ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** An integer setting whose default is derived from others (undefined when unset). */
function optionalIntVar(env: Env, name: string, min: number, max: number): number | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : intVar(env, name, 0, min, max);
}

function durationVar(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const ms = parseDuration(raw);
  if (ms === undefined) throw new ConfigError(name, `must be a duration like 500ms, 30s, 2m, 1h or milliseconds, got "${raw}"`);
  return ms;
}

/** A duration that must be more than zero (a zero deadline would turn every transient fault into a failure). */
function positiveDurationVar(env: Env, name: string, fallback: number): number {
  const ms = durationVar(env, name, fallback);
  if (ms <= 0) throw new ConfigError(name, `must be a duration above zero, got "${env[name] ?? ''}"`);
  return ms;
}

/** A retention period: at least a minute (a shorter one would delete what was just settled). */
function retentionVar(env: Env, name: string, fallback: number): number {
  const ms = durationVar(env, name, fallback);
  if (ms < 60_000) throw new ConfigError(name, `must be at least 1m, got ${ms}ms`);
  return ms;
}

/**
 * A comma-separated list of browser origins (`scheme://host[:port]`, no path), each normalized as
 * the `Origin` header carries it (lowercase host, default port dropped).
 */
/** TRUST_PROXY: the reverse proxies whose X-Forwarded-For names the caller (addresses, CIDR ranges, `loopback`); none by default. */
function trustProxyVar(env: Env): TrustProxy {
  const parsed = parseTrustProxy(env.TRUST_PROXY);
  if ('invalid' in parsed) throw new ConfigError('TRUST_PROXY', `must be a comma-separated list of proxy addresses or CIDR ranges (10.0.0.0/8, ::1, loopback), got "${parsed.invalid}"`);
  return parsed;
}

function originListVar(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((entry) => {
    const text = entry.trim();
    const url = URL.canParse(text) ? new URL(text) : undefined;
    const bare = url !== undefined && url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
    if (url === undefined || !/^https?:$/.test(url.protocol) || !bare) {
      throw new ConfigError(name, `must be a comma-separated list of origins like https://app.example.com (scheme, host, optional port; no path), got "${text}"`);
    }
    return url.origin;
  });
}

/** A lease: renewed every third of it, at most once a second, so it must last at least 2 s. */
function leaseVar(env: Env, name: string, fallback: number): number {
  const ms = durationVar(env, name, fallback);
  if (ms < 2000) throw new ConfigError(name, `must be at least 2s (the lease is renewed at most once a second), got ${ms}ms`);
  return ms;
}

/** LAUNCH_FEE_LAMPORTS (whole lamports, default 0: none) and LAUNCH_FEE_RECIPIENT (a base58 address, required with a fee). */
function operatorFeeVar(env: Env): { lamports: number; recipient: string } | undefined {
  const lamports = intVar(env, 'LAUNCH_FEE_LAMPORTS', 0, 0, 1_000_000_000_000);
  if (lamports === 0) return undefined;
  const recipient = (env.LAUNCH_FEE_RECIPIENT ?? '').trim();
  if (!/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(recipient)) throw new ConfigError('LAUNCH_FEE_RECIPIENT', 'must be the base58 address that receives LAUNCH_FEE_LAMPORTS');
  return { lamports, recipient };
}

/** A decimal SOL amount (at most 9 decimals, at most 1 000 000 SOL) as lamports. */
function solVar(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return Math.round(fallback * 1e9);
  const match = /^(\d{1,7})(?:\.(\d{1,9}))?$/.exec(raw.trim());
  if (!match) throw new ConfigError(name, `must be an amount of SOL such as 100 or 0.5 (got "${raw}")`);
  const lamports = Number(match[1]) * 1e9 + Number((match[2] ?? '').padEnd(9, '0'));
  if (lamports > 1e15) throw new ConfigError(name, 'must be at most 1000000 SOL');
  return lamports;
}

function boolVar(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function readPackageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Decodes an optional 32-byte base64 key variable. */
function optionalKeyVar(env: Env, name: string): Buffer | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32 || key.toString('base64').replace(/=+$/, '') !== raw.trim().replace(/=+$/, '')) {
    throw new ConfigError(name, 'must be 32 bytes encoded as base64 (openssl rand -base64 32)');
  }
  return key;
}

/** The NODE_ENV values the service knows (docs/configuration.md); any other stops the start. */
export const NODE_ENVS: readonly string[] = ['production', 'development', 'test'];

/** Where CHAIN_CLONE_FROM points by default in development. */
export const MAINNET_PUBLIC_RPC = 'https://api.mainnet-beta.solana.com';

/** Decodes SECRET_KEY, or outside production creates one under DATA_DIR on first start. */
function loadSecretKey(env: Env, dataDir: string, production: boolean): Buffer {
  const raw = env.SECRET_KEY;
  if (raw !== undefined && raw !== '') {
    const key = Buffer.from(raw, 'base64');
    if (key.length !== 32 || key.toString('base64').replace(/=+$/, '') !== raw.trim().replace(/=+$/, '')) {
      throw new ConfigError('SECRET_KEY', 'must be 32 bytes encoded as base64 (openssl rand -base64 32)');
    }
    return key;
  }
  if (production) throw new ConfigError('SECRET_KEY', 'is required in production (openssl rand -base64 32)');
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new ConfigError('SECRET_KEY', `file ${file} does not hold 32 base64 bytes`);
    return key;
  }
  const key = randomBytes(32);
  writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600 });
  return key;
}

/**
 * How long the PostgreSQL server lets one of our sessions sit idle inside an open transaction before
 * it ends the session (and the transaction, and its locks). The service's transactions run their
 * statements back to back, milliseconds apart; an instance stalled inside one (stopped, swapped
 * out, partitioned) would otherwise hold its locks — the claim lock every instance's dispatcher
 * takes turns on among them — for as long as it stalls.
 */
export const DEFAULT_IDLE_TRANSACTION_TIMEOUT_MS = 10_000;

/**
 * Where the database is, from DATA_DIR and DATABASE_URL alone, creating nothing (the service's
 * {@link loadConfig} then creates DATA_DIR; `npm run vacuum` must not): a PostgreSQL URL, or the
 * SQLite file (`:memory:` for an in-memory database).
 */
export function databaseLocation(env: Env = process.env): { dataDir: string; databasePath: string; postgresUrl: string | undefined } {
  const dataDir = resolve(env.DATA_DIR && env.DATA_DIR !== '' ? env.DATA_DIR : './data');
  const databaseUrl = env.DATABASE_URL;
  // A URL of another scheme (`postgress://`, `mysql://`) is a mistake, not a SQLite file named so.
  const scheme = databaseUrl === undefined ? undefined : /^([a-z][a-z0-9+.-]*):\/\//i.exec(databaseUrl)?.[1];
  if (scheme !== undefined && !/^(postgres|postgresql|sqlite|file)$/i.test(scheme)) {
    throw new ConfigError('DATABASE_URL', `has the unknown scheme "${scheme}://": use postgres://user:password@host:5432/db, or a SQLite path (sqlite:<path> or a plain path)`);
  }
  if (databaseUrl !== undefined && /^(postgres|postgresql):\/\//i.test(databaseUrl)) return { dataDir, databasePath: join(dataDir, 'launch-service.sqlite'), postgresUrl: databaseUrl };
  if (databaseUrl !== undefined && databaseUrl !== '') {
    return { dataDir, databasePath: databaseUrl === ':memory:' ? ':memory:' : resolve(databaseUrl.replace(/^(sqlite|file):(\/\/)?/i, '')), postgresUrl: undefined };
  }
  return { dataDir, databasePath: join(dataDir, 'launch-service.sqlite'), postgresUrl: undefined };
}

/** Reads and validates the environment; throws {@link ConfigError} naming the bad variable. */
/**
 * Tracing (docs/configuration.md, "Tracing"): on when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it
 * is) or OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces added) is set, unless OTEL_SDK_DISABLED=true
 * or OTEL_TRACES_EXPORTER=none. OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL:
 * http/protobuf (the default) or http/json; grpc is refused naming the variable.
 */
export function tracingVar(env: Env): TracingConfig | undefined {
  const value = (name: string) => (env[name] ?? '').trim();
  if (value('OTEL_SDK_DISABLED').toLowerCase() === 'true') return undefined;
  const exporter = value('OTEL_TRACES_EXPORTER').toLowerCase();
  if (exporter === 'none') return undefined;
  if (exporter !== '' && exporter !== 'otlp') throw new ConfigError('OTEL_TRACES_EXPORTER', `must be otlp or none (spans are exported over OTLP/HTTP), got "${exporter}"`);
  const tracesEndpoint = value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseEndpoint = value('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (tracesEndpoint === '' && baseEndpoint === '') return undefined;
  const endpointName = tracesEndpoint !== '' ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const given = tracesEndpoint !== '' ? tracesEndpoint : baseEndpoint;
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new ConfigError(endpointName, `must be an http:// or https:// URL of an OTLP/HTTP receiver, got "${given}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(endpointName, `must be an http:// or https:// URL of an OTLP/HTTP receiver, got "${given}"`);
  const protocolName = value('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== '' ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = value(protocolName) === '' ? 'http/protobuf' : value(protocolName);
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new ConfigError(protocolName, `must be http/protobuf or http/json (spans are exported over OTLP/HTTP; grpc is not supported), got "${protocol}"`);
  }
  return {
    protocol,
    url: tracesEndpoint !== '' ? tracesEndpoint : `${baseEndpoint.replace(/\/+$/, '')}/v1/traces`,
    serviceName: value('OTEL_SERVICE_NAME') === '' ? 'launch-service' : value('OTEL_SERVICE_NAME'),
  };
}

export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = env.NODE_ENV && env.NODE_ENV !== '' ? env.NODE_ENV : 'development';
  // Anything else (`prod`) would silently run in development, with its all-scope development key.
  if (!NODE_ENVS.includes(nodeEnv)) throw new ConfigError('NODE_ENV', `must be one of ${NODE_ENVS.join(', ')} (or unset: development), got "${nodeEnv}"`);
  const production = nodeEnv === 'production';
  const logLevel = env.LOG_LEVEL && env.LOG_LEVEL !== '' ? env.LOG_LEVEL : 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of fatal, error, warn, info, debug, trace, silent, got "${logLevel}"`);
  }
  const { dataDir, databasePath, postgresUrl } = databaseLocation(env);
  try {
    mkdirSync(dataDir, { recursive: true });
  } catch (error) {
    throw new ConfigError('DATA_DIR', `cannot be created: ${(error as Error).message}`);
  }
  if (postgresUrl === undefined && databasePath !== ':memory:' && !existsSync(dirname(databasePath))) {
    throw new ConfigError('DATABASE_URL', `names a SQLite file in a directory that does not exist: ${databasePath}`);
  }
  const tracing = tracingVar(env);
  let postgres: Config['postgres'];
  if (postgresUrl !== undefined) {
    postgres = {
      url: postgresUrl,
      poolSize: intVar(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
      idleTransactionTimeoutMs: durationVar(env, 'DATABASE_IDLE_TRANSACTION_TIMEOUT', DEFAULT_IDLE_TRANSACTION_TIMEOUT_MS),
    };
    // The server's setting is a 32-bit count of milliseconds (~24 days).
    if (postgres.idleTransactionTimeoutMs > 2_147_483_647) throw new ConfigError('DATABASE_IDLE_TRANSACTION_TIMEOUT', `must be at most 24d, got ${postgres.idleTransactionTimeoutMs}ms`);
  }

  const schedule = env.WEBHOOK_RETRY_SCHEDULE && env.WEBHOOK_RETRY_SCHEDULE !== '' ? env.WEBHOOK_RETRY_SCHEDULE : '0,30s,2m,10m,1h';
  const retrySchedule = parseDurationList(schedule);
  if (!retrySchedule || retrySchedule.length < 1 || retrySchedule.length > 20) {
    throw new ConfigError('WEBHOOK_RETRY_SCHEDULE', `must be 1 to 20 comma-separated durations, got "${schedule}"`);
  }

  const allowPrivate = boolVar(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', !production);
  if (production && allowPrivate) {
    throw new ConfigError('WEBHOOK_ALLOW_PRIVATE_NETWORKS', 'cannot be enabled in production');
  }

  const rpcUrl = env.SOLANA_RPC_URL && env.SOLANA_RPC_URL.trim() !== '' ? env.SOLANA_RPC_URL.trim() : undefined;
  // A comma-separated list, primary first: every entry an http(s) URL, none twice.
  const rpcUrls = rpcUrl === undefined ? [] : rpcUrl.split(',').map((u) => u.trim());
  for (const url of rpcUrls) {
    if (!/^https?:\/\/[^/\s]/i.test(url) || !URL.canParse(url)) throw new ConfigError('SOLANA_RPC_URL', `must be an http(s) URL or a comma-separated list of them, got "${url}"`);
  }
  if (new Set(rpcUrls.map((u) => new URL(u).host)).size !== rpcUrls.length) throw new ConfigError('SOLANA_RPC_URL', 'names the same host twice');
  const payerKeypairPath = env.SOLANA_PAYER_KEYPAIR && env.SOLANA_PAYER_KEYPAIR !== '' ? env.SOLANA_PAYER_KEYPAIR : undefined;
  if (rpcUrl !== undefined && payerKeypairPath === undefined) {
    throw new ConfigError('SOLANA_PAYER_KEYPAIR', 'is required when SOLANA_RPC_URL is set (path to a keypair JSON file)');
  }
  const programsDir = env.CHAIN_PROGRAMS_DIR && env.CHAIN_PROGRAMS_DIR !== '' ? resolve(env.CHAIN_PROGRAMS_DIR) : undefined;
  if (programsDir !== undefined && !existsSync(programsDir)) {
    throw new ConfigError('CHAIN_PROGRAMS_DIR', `does not exist: ${programsDir}`);
  }
  const computeLimitRaw = env.SOLANA_COMPUTE_UNIT_LIMIT;
  const secretKey = loadSecretKey(env, dataDir, production);
  const chainVar = env.CHAIN && env.CHAIN !== '' ? env.CHAIN : undefined;
  if (chainVar !== undefined && chainVar !== 'embedded' && chainVar !== 'rpc') throw new ConfigError('CHAIN', `must be embedded or rpc, got "${chainVar}"`);
  if (chainVar === 'rpc' && rpcUrl === undefined) throw new ConfigError('SOLANA_RPC_URL', 'is required when CHAIN=rpc');
  if (chainVar === 'embedded' && rpcUrl !== undefined) throw new ConfigError('CHAIN', 'is embedded but SOLANA_RPC_URL is set; unset one of them');
  if (production && rpcUrl === undefined && chainVar !== 'embedded') {
    throw new ConfigError('CHAIN', 'must be set to embedded to run the embedded chain in production (a production launch on a private chain is usually a mistake: set SOLANA_RPC_URL)');
  }
  // Unset: in development the embedded chain fetches the programs it lacks from mainnet-beta's public
  // RPC (after the start, in the background); under test and in production it fetches nothing.
  const cloneRaw = env.CHAIN_CLONE_FROM && env.CHAIN_CLONE_FROM.trim() !== '' ? env.CHAIN_CLONE_FROM.trim() : undefined;
  if (cloneRaw !== undefined && cloneRaw !== 'off' && !/^https?:\/\/[^/\s]/i.test(cloneRaw)) throw new ConfigError('CHAIN_CLONE_FROM', `must be an http(s) URL or off, got "${cloneRaw}"`);
  const cloneFrom = rpcUrl !== undefined || cloneRaw === 'off' ? undefined : (cloneRaw ?? (nodeEnv === 'development' ? MAINNET_PUBLIC_RPC : undefined));
  const rpcPortRaw = env.CHAIN_RPC_PORT && env.CHAIN_RPC_PORT !== '' ? env.CHAIN_RPC_PORT.trim() : undefined;
  if (production && rpcPortRaw !== undefined && rpcPortRaw !== 'off') throw new ConfigError('CHAIN_RPC_PORT', 'cannot serve the embedded chain in production; set it to off');
  const threadVar = env.CHAIN_THREAD && env.CHAIN_THREAD !== '' ? env.CHAIN_THREAD.trim() : 'off';
  if (threadVar !== 'on' && threadVar !== 'off') throw new ConfigError('CHAIN_THREAD', `must be on or off, got "${threadVar}"`);
  const rpcServer =
    production || rpcUrl !== undefined || rpcPortRaw === 'off'
      ? undefined
      : {
          host: env.CHAIN_RPC_HOST && env.CHAIN_RPC_HOST !== '' ? env.CHAIN_RPC_HOST : '127.0.0.1',
          port: intVar(env, 'CHAIN_RPC_PORT', 8899, 0, 65534),
          ...(rpcPortRaw === undefined ? { fallback: true } : {}),
        };

  return {
    nodeEnv,
    production,
    port: intVar(env, 'PORT', 8080, 0, 65535),
    // Outside production only this machine can reach the all-scope development key's API by default.
    host: env.HOST && env.HOST !== '' ? env.HOST : production ? '0.0.0.0' : '127.0.0.1',
    logLevel,
    logPretty: env.LOG_FORMAT === 'pretty' || (env.LOG_FORMAT !== 'json' && !production && process.stdout.isTTY === true),
    dataDir,
    databasePath,
    postgres,
    secretKey,
    tracing,
    previousSecretKey: optionalKeyVar(env, 'SECRET_KEY_PREVIOUS'),
    chain: {
      mode: rpcUrl ? 'rpc' : 'embedded',
      rpcUrl,
      payerKeypairPath,
      rpcTimeoutMs: positiveDurationVar(env, 'SOLANA_RPC_TIMEOUT', 10_000),
      rpcReadTimeoutMs: positiveDurationVar(env, 'SOLANA_RPC_READ_TIMEOUT', 2_000),
      rpcBreakerResetMs: positiveDurationVar(env, 'SOLANA_RPC_BREAKER_RESET', 5_000),
      programsDir,
      priorityFeeMicroLamports: intVar(env, 'SOLANA_PRIORITY_FEE_MICROLAMPORTS', 0, 0, 100_000_000),
      priorityFeeMaxMicroLamports:
        env.PRIORITY_FEE_MAX_MICROLAMPORTS === undefined || env.PRIORITY_FEE_MAX_MICROLAMPORTS === '' ? undefined : intVar(env, 'PRIORITY_FEE_MAX_MICROLAMPORTS', 0, 0, 100_000_000),
      computeUnitLimit:
        computeLimitRaw === undefined || computeLimitRaw === '' ? undefined : intVar(env, 'SOLANA_COMPUTE_UNIT_LIMIT', 200_000, 1, 1_400_000),
      rpcServer,
      cloneFrom,
      thread: threadVar === 'on',
    },
    runner: {
      leaseMs: leaseVar(env, 'RUNNER_LEASE_MS', 60_000),
      concurrency: env.RUNNER_CONCURRENCY && env.RUNNER_CONCURRENCY !== '' ? intVar(env, 'RUNNER_CONCURRENCY', 2, 1, 64) : undefined,
      transientDeadlineMs: positiveDurationVar(env, 'LAUNCH_TRANSIENT_DEADLINE', 3_600_000),
      signingDeadlineMs: positiveDurationVar(env, 'SIGNING_DEADLINE', 24 * 3_600_000),
    },
    watcher: {
      ttlMs: durationVar(env, 'WATCH_TTL', 365 * 86_400_000),
      pollIntervalMs: durationVar(env, 'WATCH_POLL_INTERVAL', 2000),
      maxIntervalMs: durationVar(env, 'WATCH_MAX_INTERVAL', 10 * 60_000),
      pageSize: intVar(env, 'WATCH_PAGE_SIZE', 1000, 1, 1000),
      autoClaimIntervalMs: positiveDurationVar(env, 'FEE_AUTO_CLAIM_INTERVAL', 30_000),
    },
    retention: {
      periodMs: retentionVar(env, 'RETENTION', 30 * 86_400_000),
      launchPeriodMs: env.LAUNCH_RETENTION && env.LAUNCH_RETENTION !== '' ? retentionVar(env, 'LAUNCH_RETENTION', 0) : undefined,
    },
    webhooks: {
      retrySchedule,
      timeoutMs: durationVar(env, 'WEBHOOK_TIMEOUT_MS', 10_000),
      allowPrivateNetworks: allowPrivate,
      testSecret: env.WEBHOOK_TEST_SECRET && env.WEBHOOK_TEST_SECRET !== '' ? env.WEBHOOK_TEST_SECRET : 'whsec_test_signing_secret',
      maxInFlight: intVar(env, 'WEBHOOK_MAX_IN_FLIGHT', 64, 1, 10_000),
      maxInFlightPerHost: intVar(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_HOST', 8, 1, 1000),
      maxInFlightPerEndpoint: optionalIntVar(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT', 1, 1000),
      maxInFlightPerOwner: optionalIntVar(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_OWNER', 1, 10_000),
      prefetchPerHost: optionalIntVar(env, 'WEBHOOK_PREFETCH_PER_HOST', 0, 1000),
      leaseMs: durationVar(env, 'WEBHOOK_LEASE_MS', 60_000),
      pollIntervalMs: durationVar(env, 'WEBHOOK_POLL_INTERVAL_MS', 1000),
    },
    breaker: {
      failureThreshold: intVar(env, 'BREAKER_FAILURE_THRESHOLD', 3, 1, 1000),
      resetTimeoutMs: durationVar(env, 'BREAKER_RESET_TIMEOUT', 5 * 60_000),
    },
    funding: { devAirdropLamports: production ? 0 : solVar(env, 'FUNDING_DEV_AIRDROP', 100), operatorFee: operatorFeeVar(env) },
    endpoints: { disableAfterMs: durationVar(env, 'ENDPOINT_DISABLE_AFTER', 5 * 86_400_000) },
    ownerLimits: {
      endpoints: intVar(env, 'MAX_ENDPOINTS_PER_OWNER', DEFAULT_OWNER_LIMITS.endpoints, 1, OWNER_LIMIT_CEILINGS.endpoints),
      launchesInFlight: intVar(env, 'MAX_LAUNCHES_IN_FLIGHT_PER_OWNER', DEFAULT_OWNER_LIMITS.launchesInFlight, 1, OWNER_LIMIT_CEILINGS.launchesInFlight),
      redeliveries: intVar(env, 'MAX_REDELIVERIES_PER_DELIVERY', DEFAULT_OWNER_LIMITS.redeliveries, 0, OWNER_LIMIT_CEILINGS.redeliveries),
    },
    rateLimitPerMinute: intVar(env, 'RATE_LIMIT_PER_MINUTE', 120, 1, 1_000_000),
    bodyLimitBytes: intVar(env, 'BODY_LIMIT_BYTES', 64 * 1024, 1024, 10 * 1024 * 1024),
    mcpAllowedOrigins: originListVar(env, 'MCP_ALLOWED_ORIGINS'),
    http: {
      requestTimeoutMs: durationVar(env, 'HTTP_REQUEST_TIMEOUT', 30_000),
      maxConnectionsPerClient: intVar(env, 'HTTP_MAX_CONNECTIONS_PER_CLIENT', 64, 0, 100_000),
      trustProxy: trustProxyVar(env),
    },
    eventStreams: {
      perKey: intVar(env, 'EVENT_STREAMS_PER_KEY', 10, 1, 100_000),
      perOwner: intVar(env, 'EVENT_STREAMS_PER_OWNER', 20, 1, 100_000),
      max: intVar(env, 'EVENT_STREAMS_MAX', 500, 1, 1_000_000),
    },
    healthCheckTimeoutMs: durationVar(env, 'HEALTH_CHECK_TIMEOUT_MS', 1500),
    healthCacheMs: durationVar(env, 'HEALTH_CACHE_MS', 1000),
    version: readPackageVersion(),
    ops: {
      metricsToken: env.METRICS_TOKEN && env.METRICS_TOKEN !== '' ? env.METRICS_TOKEN : undefined,
      dashboardSessionTtlMs: durationVar(env, 'DASHBOARD_SESSION_TTL', 8 * 3600_000),
      dashboardSignInPerMinute: intVar(env, 'DASHBOARD_SIGN_IN_PER_MINUTE', 10, 1, 100_000),
      explorerCluster: env.EXPLORER_CLUSTER && env.EXPLORER_CLUSTER !== '' ? env.EXPLORER_CLUSTER : rpcUrl ? 'devnet' : 'custom',
    },
  };
}
