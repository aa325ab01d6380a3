import { startTracing, stopTracing } from '../lib/tracing.js';
import { PublicKey } from '@solana/web3.js';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { CompiledQuery, sql } from 'kysely';
import { ensureDevelopmentKey } from '../auth/devKey.js';
import type { CreatedKey } from '../auth/apiKeys.js';
import { ChainReadCache } from '../cache/chainReadCache.js';
import type { ChainBackend } from '../chain/backend.js';
import type { ChainThread } from '../chain/embedded/thread/client.js';
import { createSecretBox } from '../crypto/secretBox.js';
import { acquireWriterLock } from '../db/writerLock.js';
import { createPostgresWakeups, noWakeups } from '../db/wakeups.js';
import { newId } from '../lib/ids.js';
import { processLoopBudget } from '../lib/loopBudget.js';
import { MigrationError, migrateToLatest, openConfiguredDatabase, openDatabase, type Db } from '../db/database.js';
import { ConfigError, type Config } from '../config/config.js';
import { cachedHealth } from '../health/cachedHealth.js';
import { checkHealth, type BreakerSource } from '../health/healthService.js';
import { createApp } from '../http/app.js';
import { healthFastPath, type RequestFastPath } from '../http/healthFastPath.js';
import { createHealthResponder } from '../http/routes/health.js';
import type { AppEnv } from '../http/env.js';
import { createRateLimiter } from '../http/middleware/rateLimit.js';
import { createChainStepRunner, launchKeySecret } from '../launches/chainStepRunner.js';
import { Graduator } from '../watcher/graduation/graduator.js';
import { createFeeClaims, type FeeClaims } from '../fees/feeClaims.js';
import { AutoClaimer, insertAutoClaimFor } from '../fees/autoClaim.js';
import { insertCurveMigrationFor } from '../watcher/graduation/launch.js';
import { createSigning, type Signing } from '../launches/signing/signing.js';
import { returnNonceRent, withCreatorSigning } from '../launches/signing/signedStepRunner.js';
import type { StepRunner } from '../launches/stepPort.js';
import { LaunchRunner } from '../launches/runner.js';
import { requeueFailedLaunch } from '../launches/requeueLaunch.js';
import { purgeExpiredIdempotencyKeys, requestHashKey, upgradeLegacyRequestHashes } from '../launches/idempotency.js';
import { createHostLabeler } from '../health/hostLabel.js';
import { observeRequests } from '../metrics/httpMetrics.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { createMetricsRoutes } from '../metrics/routes.js';
import { createDashboardRoutes } from '../dashboard/routes.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { redeliverEvent } from '../webhooks/redeliver.js';
import { createWebhookService } from '../webhooks/service.js';
import { apiRoutes } from './routes.js';
import { createMcpRoutes } from './mcpRoutes.js';
import { createChainBackend, checkCapabilities, startChainThread, stepExecutorsFor } from './serviceChain.js';
import { ChainWatcher } from '../watcher/watcher.js';
import { createFunding } from '../funding/funding.js';
import { resealUnderCurrentKey } from './rotateSecretKey.js';
import { WATCH_HANDLERS, watchesForLaunch } from '../watcher/handlers.js';
import { ensureFundingWatch, insertWatches } from '../watcher/store.js';
import { withdrawn } from '../watcher/events.js';
import { recordOwnerEvent } from '../webhooks/outbox.js';
import { createRetention, type Retention } from '../retention/retention.js';

/** RUNNER_CONCURRENCY's default against an RPC cluster (docs/configuration.md). */
export const DEFAULT_RPC_RUNNER_CONCURRENCY = 16;

export interface Service {
  app: Hono<AppEnv>;
  /** For the HTTP server (startHttpServer's `fastPath`): anonymous `GET`/`HEAD /api/health` without the framework. */
  fastPath: RequestFastPath;
  db: Db;
  chain: ChainBackend;
  /** With CHAIN_THREAD=on, the thread the embedded chain runs on (`chain` is its proxy). */
  chainThread: ChainThread | undefined;
  runner: LaunchRunner;
  /** The chain watcher (docs/watcher.md): what happens to a launch's escrow, realm and pool after it completes. */
  watcher: ChainWatcher;
  /** The graduation job (docs/programs.md, "Graduation"): a full bonding curve's migration to DAMM v2. */
  graduator: Graduator;
  /** Creator fees of launches: read and claim (docs/funding.md, "Creator fees"). */
  fees: FeeClaims;
  /** Claims a launch's creator fees by itself once they reach its autoClaimMinLamports (docs/funding.md, "Auto-claim"). */
  autoClaimer: AutoClaimer;
  /** Creator-signed launches (docs/signing.md): the signing request, signatures and the signing loop. */
  signing: Signing;
  cache: ChainReadCache;
  breakers: BreakerSource;
  /** Deletes what is past RETENTION / LAUNCH_RETENTION (docs/architecture.md, "Retention"). */
  retention: Retention;
  /** What `/metrics` exports (README.md, Operations). */
  metrics: Metrics;
  /**
   * Outside production with no keys yet, creates the development key and returns it to print once
   * (call it after the port is bound, so a failed start does not lose the key); else undefined.
   */
  createDevelopmentKey(): Promise<CreatedKey | undefined>;
  /**
   * Runs the health checks once, so the first `GET /api/health` after the port opens is answered
   * from a report (call it before listening).
   */
  warmUp(): Promise<void>;
  /**
   * Starts the background workers (runner, dispatcher, cache refresh), one per turn of the event
   * loop from the next one on, so connections accepted meanwhile are answered between their first
   * turns (the backlog a restart resumes is worked in slices, never as one long task).
   */
  start(): void;
  /** Stops the workers in reverse order and closes the chain and the database. */
  stop(): Promise<void>;
}

/** Builds every component from the config and wires them (the composition root's body). */
export async function createService(
  config: Config,
  deps: {
    logger: Logger;
    clock: Clock;
    /**
     * With PostgreSQL, a SQLite file for an in-process embedded chain's state (tests build a service
     * this way). Without it the embedded chain is refused on PostgreSQL: it lives in one process.
     */
    embeddedChainFile?: string;
    /**
     * Wraps the runner's chain step runner (the `pipeline` bench replays recorded step outcomes
     * through it to measure the service's own work per launch without the chain's).
     */
    wrapStepRunner?: (chain: StepRunner) => StepRunner;
  },
): Promise<Service> {
  const { logger, clock } = deps;
  const startedAt = clock.now();
  if (config.postgres && config.chain.mode === 'embedded' && deps.embeddedChainFile === undefined) {
    throw new ConfigError(
      'DATABASE_URL',
      'is PostgreSQL, which several instances share, but the embedded chain runs inside one process: run a shared chain (`npm run chain`, then SOLANA_RPC_URL=http://127.0.0.1:8899 and SOLANA_PAYER_KEYPAIR) or point SOLANA_RPC_URL at a real cluster',
    );
  }
  // One process per SQLite data directory: refused here, before the database or the chain is touched.
  // PostgreSQL is shared by design (docs/architecture.md, SQLite and PostgreSQL).
  const writerLock = config.postgres ? { release: () => undefined } : acquireWriterLock(config.databasePath);
  const database = (() => {
    try {
      return openConfiguredDatabase(config, { logger });
    } catch (error) {
      writerLock.release();
      throw error;
    }
  })();
  const closers: Array<() => Promise<void> | void> = [() => writerLock.release(), () => database.close()];
  try {
    // Tracing (docs/configuration.md, "Tracing"): the SDK is loaded only when an OTLP endpoint is set;
    // what is still batched is exported when the service stops.
    if (config.tracing) {
      await startTracing(config.tracing);
      closers.push(() => stopTracing());
    }
    const { db } = database;
    await migrateToLatest(db).catch((error: unknown) => {
      // No migration ran: the server of DATABASE_URL cannot be used (no such host, no such database, refused).
      if (config.postgres && error instanceof MigrationError && error.migrationName === undefined) {
        throw new ConfigError('DATABASE_URL', `names a PostgreSQL server that cannot be used (${postgresTarget(config.postgres.url)}): ${error.reason}`);
      }
      throw error;
    });
    const hashKey = requestHashKey(config.secretKey);
    await upgradeLegacyRequestHashes(db, hashKey);
    const secretBox = createSecretBox(config.secretKey);
    // A rotated SECRET_KEY: what the previous key sealed is sealed again under the new one.
    if (config.previousSecretKey) await resealUnderCurrentKey(db, secretBox, createSecretBox(config.previousSecretKey), clock.now(), logger);
    let chainDb = db;
    if (config.postgres && config.chain.mode === 'embedded' && deps.embeddedChainFile !== undefined) {
      // `npm run vacuum` switches the service's database only: no advice about this file's auto_vacuum.
      const chainStore = openDatabase(deps.embeddedChainFile, { logger, vacuumAdvice: false });
      closers.push(() => chainStore.close());
      await migrateToLatest(chainStore.db);
      chainDb = chainStore.db;
    }
    // The embedded chain on a thread of its own (CHAIN_THREAD=on), on a second connection to this
    // SQLite file. A service built with another clock (tests) keeps it here: the thread reads the system clock.
    const shareWriteLock = database.shareWriteLock;
    const chainThread =
      config.chain.mode === 'embedded' && config.chain.thread && chainDb === db && shareWriteLock && config.databasePath !== ':memory:' && clock === systemClock
        ? await startChainThread(config, { clock, logger, writeLock: shareWriteLock() })
        : undefined;
    const chain = chainThread?.backend ?? (await createChainBackend(config, { db: chainDb, clock, logger }));
    closers.push(() => chain.close());
    const cache = new ChainReadCache(chain, clock, logger.child({ component: 'cache' }));

    // Several instances on one PostgreSQL database wake each other (LISTEN/NOTIFY); polling stays the fallback.
    const wakeups = config.postgres
      ? createPostgresWakeups({ url: config.postgres.url, instanceId: newId('ins', 8), logger, execute: (q) => db.executeQuery(CompiledQuery.raw(q.text, q.values)) })
      : noWakeups;
    closers.push(() => wakeups.close());
    // On PostgreSQL breakers run on the database server's clock, one for every instance (a service
    // built with another clock, a test moving time by hand, keeps that clock).
    const webhooks = createWebhookService({ db, clock, logger, config, secretBox, wakeups, databaseClock: config.postgres !== undefined && clock === systemClock });
    const funding = createFunding({
      db,
      chain,
      secretBox,
      clock,
      logger,
      devAirdropLamports: config.funding.devAirdropLamports,
      onRefused: (reason) => metrics.countFundingRefused(reason),
      // The wallet's deposit watch commits with the wallet (docs/watcher.md); its events go to the owner's endpoints.
      onWalletCreated: (trx, wallet) => ensureFundingWatch(trx, { owner: wallet.owner, address: wallet.address, now: clock.now(), firstIntervalMs: config.watcher.pollIntervalMs }),
      onWithdrawn: async (trx, w) => void (await recordOwnerEvent(trx, clock, { owner: w.owner, event: 'funding.withdrawn', data: withdrawn({ address: w.address, to: w.to, lamports: w.lamports, signature: w.signature }) })),
      afterCommit: () => webhooks.signal.notify(),
    });
    // Creator-signed launches (docs/signing.md): planned with the same executors, landed by the runner.
    const signing = createSigning({
      db,
      clock,
      chain,
      secretKey: config.secretKey,
      executors: stepExecutorsFor(),
      signal: { notify: (handoff) => (webhooks.signal.notify(handoff), wakeLaunches()) },
      logger,
      deadlineMs: config.runner.signingDeadlineMs,
    });
    /** Launches whose completion made watches (or a curve's graduation record), until the commit wakes the watchers. */
    const madeWatches = new Set<string>();
    const runner = new LaunchRunner({
      db,
      clock,
      logger: logger.child({ component: 'runner' }),
      signal: webhooks.signal,
      runStep: (deps.wrapStepRunner ?? ((runner: StepRunner) => runner))(
        withCreatorSigning({ chain, signing }, chainThread?.runStep ?? createChainStepRunner({ chain, secretKey: config.secretKey, executors: stepExecutorsFor() })),
      ),
      finalize: (signatures) => finalizeAll(chain, signatures),
      // A creator-signed launch that fails gives its nonce accounts' rent back first (docs/signing.md).
      beforeFail: returnNonceRent({ chain, signing, logger: logger.child({ component: 'signing' }) }),
      // A completed launch gets its watches in the same transaction (docs/watcher.md).
      onComplete: async (trx, launchId, results, now) => {
        // A creator-signed curve's watch reports the creator's own fee claims (docs/signing.md): one read, for curves only.
        const curve = (results.pool as { kind?: unknown } | undefined)?.kind === 'bonding-curve';
        const creatorSigned = curve && (await trx.selectFrom('launch_signing').select('launch_id').where('launch_id', '=', launchId).executeTakeFirst()) !== undefined;
        const watches = watchesForLaunch(results, { creatorSigned });
        await insertWatches(trx, { launchId, watches, now, ttlMs: config.watcher.ttlMs, firstIntervalMs: config.watcher.pollIntervalMs });
        // A bonding curve's graduation record, with its watch (docs/programs.md, "Graduation").
        const graduates = await insertCurveMigrationFor(trx, launchId, results, now);
        if (watches.length > 0 || graduates) madeWatches.add(launchId);
        // Its fees' auto-claim, when the request set autoClaimMinLamports (docs/funding.md, "Auto-claim").
        await insertAutoClaimFor(trx, launchId, results, now);
      },
      // While the event loop runs late, take one launch at a time: the embedded chain's work is CPU on
      // this process. Against a cluster a launch mostly waits on the network, so holding it back
      // relieves nothing (on a busy machine it would run launches one by one).
      busy: chain.kind === 'rpc' ? undefined : () => webhooks.engine.loopLag.busy(),
      // Only a launch that made watches wakes the watchers: a turn with nothing due is still a claim
      // transaction, and most launches (token-2022 without vesting, DAO or pool) make none.
      completed: (launchId) => {
        if (!madeWatches.delete(launchId)) return;
        watcher.wake();
        wakeups.publish('watches');
      },
      leaseMs: config.runner.leaseMs,
      transientDeadlineMs: config.runner.transientDeadlineMs,
      // Every RPC endpoint's breaker open: hold launches rather than spend their tries on fast failures.
      chainAvailable: () => chain.breakerState?.().state !== 'open',
      // Against a cluster a launch waits on the network, not the CPU: many wait at once, bounded by the
      // provider (its 429s slow every call to it) and the owners' wallets and launch bounds. With the
      // embedded chain on its own thread, more launches in flight keep both threads busy.
      concurrency: config.runner.concurrency ?? (chain.kind === 'rpc' ? DEFAULT_RPC_RUNNER_CONCURRENCY : chainThread ? 4 : 2),
      // The embedded chain commits to this database after the pending record, in WAL order (on its
      // thread too: a second connection to the same file and WAL).
      pendingDurability: chain.kind === 'embedded' ? 'ordered' : 'full',
      syncDurable: database.syncWal,
      confirmedIsFinal: chain.kind === 'embedded',
      funding,
    });
    const watcher = new ChainWatcher({
      db,
      clock,
      logger: logger.child({ component: 'watcher' }),
      chain: chain.history,
      handlers: WATCH_HANDLERS,
      signal: webhooks.signal,
      pollIntervalMs: config.watcher.pollIntervalMs,
      maxIntervalMs: config.watcher.maxIntervalMs,
      pageLimit: config.watcher.pageSize,
    });

    // Runs a full curve's migration to DAMM v2, once across instances (docs/programs.md, "Graduation").
    const graduator = new Graduator({
      db,
      clock,
      logger: logger.child({ component: 'graduation' }),
      chain,
      keySecret: launchKeySecret(config.secretKey),
      funding,
      signal: webhooks.signal,
      leaseMs: config.runner.leaseMs,
    });

    // Creator fees: what is claimable, and claims paid to the launch's recipient (docs/funding.md, "Creator fees").
    const fees = createFeeClaims({ db, clock, chain, logger: logger.child({ component: 'fees' }), funding, signal: webhooks.signal, leaseMs: config.runner.leaseMs });
    const autoClaimer = new AutoClaimer({ db, clock, logger: logger.child({ component: 'auto-claim' }), fees, intervalMs: config.watcher.autoClaimIntervalMs });

    const runChecks = () =>
      checkHealth({
        clock,
        version: config.version,
        startedAt,
        timeoutMs: config.healthCheckTimeoutMs,
        breakers: webhooks.breakers,
        chainEndpoints: chain.endpointHealth ? () => chain.endpointHealth!() : undefined,
        probes: {
          database: async () => {
            await sql`select count(*) from launches where id = ${'probe'}`.execute(db);
          },
          chain: async () => {
            const probe = await chain.probe();
            return `${chain.kind} slot ${probe.slot}`;
          },
          cache: async () => {
            await cache.ensureFresh();
            return `age ${cache.ageMs() ?? 0} ms`;
          },
        },
      });
    const health = cachedHealth(runChecks, clock, config.healthCacheMs);

    const launchRunner = runner;
    /** A launch was queued or re-queued: this instance's runner and, through the database, the others'. */
    const wakeLaunches = () => (launchRunner.wake(), wakeups.publish('launches'));
    wakeups.on('launches', () => launchRunner.wake());
    // A completed launch's watches committed with it: every instance's watcher looks at once.
    wakeups.on('watches', () => watcher.wake());
    // Production shows customers' webhook hosts to nobody but admins: health and metrics label them with a keyed hash.
    const hostLabel = config.production ? createHostLabeler(config.secretKey) : undefined;
    const metrics = createMetrics({
      db,
      clock,
      breakers: webhooks.breakers,
      health,
      hostLabel,
      sqlitePath: config.postgres ? undefined : config.databasePath,
      onTableStatsError: (error) => logger.warn({ err: error }, 'table sizes for /metrics could not be computed'),
    });
    closers.push(() => metrics.close());
    const dashboard = createDashboardRoutes({
      db,
      clock,
      logger,
      production: config.production,
      sessionTtlMs: config.ops.dashboardSessionTtlMs,
      explorerCluster: config.ops.explorerCluster,
      health,
      breakers: webhooks.breakers,
      signal: webhooks.signal,
      maxRedeliveries: config.ownerLimits.redeliveries,
      ownerLimits: config.ownerLimits,
      bodyLimitBytes: config.bodyLimitBytes,
      signInLimiter: createRateLimiter({ db, clock, logger, limit: config.ops.dashboardSignInPerMinute }),
      balanceOf: (address) => chain.getLamports(new PublicKey(address)),
      deadLetters: {
        db,
        clock,
        requeueLaunch: (trx, deadLetter) => requeueFailedLaunch(trx, clock, deadLetter),
        checkLaunchRetry: (deadLetter) => signing.assertRetryable(deadLetter.launch_id),
        redeliver: async (trx, dl) =>
          void (await redeliverEvent(trx, clock, { eventId: dl.event_id, launchId: dl.launch_id, deliveryId: dl.delivery_id }, config.ownerLimits.redeliveries)),
        wake: (kind) => {
          webhooks.signal.notify();
          if (kind === 'launch') wakeLaunches();
        },
      },
    });
    const limiter = createRateLimiter({ db, clock, logger, limit: config.rateLimitPerMinute });
    const healthAnswer = createHealthResponder({ check: health, hostLabel });
    const app = createApp({
      db,
      logger,
      limiter,
      bodyLimitBytes: config.bodyLimitBytes,
      mcpAllowedOrigins: config.mcpAllowedOrigins,
      trustProxy: config.http.trustProxy,
      loopBudget: processLoopBudget,
      routes: apiRoutes({
        db,
        clock,
        version: config.version,
        production: config.production,
        secretBox,
        requestHashKey: hashKey,
        health: healthAnswer,
        engine: webhooks.engine,
        testSecret: config.webhooks.testSecret,
        launchSignal: { notify: (handoff) => (webhooks.signal.notify(handoff), wakeLaunches()) },
        checkCapabilities: (request) => checkCapabilities(chain, request),
        funding,
        fees,
        operatorFee: config.funding.operatorFee,
        signing,
        requeueLaunch: (trx, deadLetter) => requeueFailedLaunch(trx, clock, deadLetter),
        checkLaunchRetry: (deadLetter) => signing.assertRetryable(deadLetter.launch_id),
        wakeRunner: wakeLaunches,
        ownerLimits: config.ownerLimits,
        eventStreamLimits: { ...config.eventStreams, perAddress: config.http.maxConnectionsPerClient },
      }),
      observe: observeRequests(metrics),
      // In production without METRICS_TOKEN /metrics is not mounted at all: every method and
      // /metrics/ get the 404 of any unknown path, so nothing says the route exists.
      pages: [
        ...(config.production && config.ops.metricsToken === undefined ? [] : [['/metrics', createMetricsRoutes({ metrics, token: config.ops.metricsToken })] as [string, Hono]]),
        ['/dashboard', dashboard],
      ],
    });

    const retention = createRetention({
      db,
      clock,
      logger: logger.child({ component: 'retention' }),
      retentionMs: config.retention.periodMs,
      launchRetentionMs: config.retention.launchPeriodMs,
      // SQLite: the pages the sweep freed go back to the file system a few at a time.
      reclaimFreePages: database.reclaimFreePages,
    });

    // The MCP server (docs/mcp.md): each tool is a request to the REST route, as the caller.
    app.route('/mcp', createMcpRoutes({ version: config.version, fetch: (request, env) => app.fetch(request, env) }));

    let started = false;
    let stopped = false;
    let janitor: NodeJS.Timeout | undefined;
    let nextStart: NodeJS.Immediate | undefined;
    const purgeKeys = () =>
      purgeExpiredIdempotencyKeys(db, clock.now()).catch((error: unknown) => logger.warn({ err: error }, 'idempotency key purge failed'));
    return {
      app,
      fastPath: healthFastPath({ health: healthAnswer, limiter, logger, observe: (method, route, status, seconds) => metrics.observeRequest(method, route, status, seconds) }),
      db,
      chain,
      chainThread,
      runner: launchRunner,
      watcher,
      graduator,
      fees,
      autoClaimer,
      signing,
      cache,
      breakers: webhooks.breakers,
      retention,
      metrics,
      createDevelopmentKey: () => ensureDevelopmentKey(db, { production: config.production, now: clock.now() }),
      warmUp: async () => void (await health()),
      start() {
        if (started) return;
        started = true;
        const starts = [
          () => cache.start(),
          () => webhooks.start(),
          () => launchRunner.start(),
          () => watcher.start(),
          () => graduator.start(),
          () => autoClaimer.start(),
          () => signing.start(),
          () => void wakeups.start(),
          () => retention.start(),
          () => {
            // Idempotency keys are kept 24 h; sweep the expired ones hourly.
            void purgeKeys();
            janitor = setInterval(() => void purgeKeys(), 3600_000);
            janitor.unref();
          },
        ];
        const startNext = () => {
          nextStart = undefined;
          if (stopped) return;
          starts.shift()?.();
          if (starts.length > 0) nextStart = setImmediate(startNext);
        };
        nextStart = setImmediate(startNext);
      },
      async stop() {
        stopped = true;
        if (nextStart) clearImmediate(nextStart);
        clearInterval(janitor);
        await retention.stop();
        cache.stop();
        // Bounded: a step stuck on the chain must not hold shutdown past the process manager's patience.
        if (!(await launchRunner.stop({ timeoutMs: 15_000 }))) logger.warn('launch steps still running at shutdown; their leases will expire and they resume on the next start');
        await watcher.stop();
        await graduator.stop();
        await autoClaimer.stop();
        await signing.stop();
        await webhooks.stop();
        for (const close of closers.reverse()) await close();
      },
    };
  } catch (error) {
    for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => undefined);
    throw error;
  }
}

/** Waits for every transaction of a launch to be final (a no-op wait on the embedded chain). */
async function finalizeAll(chain: ChainBackend, signatures: string[]): Promise<void> {
  if (chain.kind === 'embedded') return;
  const height = await chain.getBlockHeight();
  for (const signature of signatures) await chain.confirmTransaction(signature, height + 300, 'finalized');
}

/** Host, port and database of a PostgreSQL URL, without its user or password. */
function postgresTarget(url: string): string {
  try {
    const parsed = new URL(url);
    return `host ${parsed.hostname || 'localhost'}:${parsed.port || '5432'}, database ${decodeURIComponent(parsed.pathname.slice(1)) || parsed.username || 'postgres'}`;
  } catch {
    return 'an unparsable URL';
  }
}
