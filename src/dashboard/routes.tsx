import { clientAddressOf } from '../http/clientAddress.js';
import { Hono, type Context } from 'hono';
import type { Child } from 'hono/jsx';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Logger } from 'pino';
import { findActiveKey } from '../auth/apiKeys.js';
import { DEFAULT_OWNER_LIMITS, type OwnerLimits } from '../config/config.js';
import type { Db } from '../db/database.js';
import type { LaunchStatus } from '../db/schema.js';
import type { HealthReport } from '../health/healthService.js';
import type { Clock } from '../lib/clock.js';
import { ConflictError, DomainError, NotFoundError } from '../lib/errors.js';
import type { BreakerRegistry } from '../webhooks/breakerRegistry.js';
import { resolveDeadLetter, retryDeadLetter, type DeadLetterRetryDeps } from '../deadLetters/retry.js';
import type { OutboxSignal } from '../webhooks/outbox.js';
import { redeliverEvent } from '../webhooks/redeliver.js';
import { getDeadLetter } from '../deadLetters/store.js';
import { getDelivery } from '../webhooks/sql/deliveryQueries.js';
import { BreakersPage, listBreakers } from './breakers.js';
import { DEAD_LETTER_KINDS, DEAD_LETTER_STATUSES, DeadLettersPage, listDeadLettersPage } from './deadLetters.js';
import { DELIVERY_FILTERS, DeliveriesPage, listDeliveriesPage, type DeliveryFilterStatus } from './deliveries.js';
import { attemptsByDelivery, openBreakerEndpoints } from './deliveryTable.js';
import { Layout } from './layout.js';
import { LaunchPage, loadLaunch } from './launch.js';
import { LAUNCH_STATUSES, LaunchesPage, listLaunchesPage } from './launches.js';
import { OverviewPage, loadOverview } from './overview.js';
import { formBodyGuard } from './formGuard.js';
import { FundingPage, loadFunding } from './funding.js';
import { EndpointPage, EndpointsPage, listEndpointsPage, loadEndpoint } from './endpoints.js';
import { recoverEndpoint } from '../webhooks/endpoints/recover.js';
import { parseRecover } from '../webhooks/endpoints/request.js';
import { canSee } from './scope.js';
import { createSession, deleteSession, findSession, newToken, sameToken, type DashboardUser } from './session.js';
import { MessagePage, SignInPage } from './signIn.js';

export interface DashboardDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  production: boolean;
  sessionTtlMs: number;
  explorerCluster: string;
  health(): Promise<HealthReport>;
  breakers: Pick<BreakerRegistry, 'snapshot' | 'list' | 'reset'>;
  /** Wakes the dispatcher after a redelivery or a breaker reset. */
  signal: OutboxSignal;
  /** MAX_REDELIVERIES_PER_DELIVERY (default: the service's). */
  maxRedeliveries?: number;
  /** The configured owner bounds, shown on the funding page beside each owner's overrides (default: DEFAULT_OWNER_LIMITS). */
  ownerLimits?: OwnerLimits;
  /** BODY_LIMIT_BYTES: the largest form body read (default 64 KiB). */
  bodyLimitBytes?: number;
  /**
   * Counts failed sign-in attempts per client address (the service's rate limiter at
   * DASHBOARD_SIGN_IN_PER_MINUTE); none: sign-in is not limited.
   */
  signInLimiter?: SignInLimiter;
  /** The dead-letter retry's collaborators (the same the API's retry uses). */
  deadLetters: DeadLetterRetryDeps;
  /** A funding wallet's balance read from the chain (none: balances show as unavailable). */
  balanceOf?(address: string): Promise<bigint>;
  /** How long the funding page waits for a balance before it shows "unavailable" (default 1500 ms). */
  balanceTimeoutMs?: number;
}

/** The part of the API's request limiter sign-in uses. */
export interface SignInLimiter {
  take(subject: string, peek?: boolean): { allowed: boolean; resetSeconds: number } | Promise<{ allowed: boolean; resetSeconds: number }>;
}

type DashEnv = { Variables: { user: DashboardUser | undefined; form: Record<string, string | File | Array<string | File>> } };

const SESSION = 'dash_session';
const LOGIN = 'dash_login';

const NOTICES: Record<string, string> = {
  redelivered: 'Redelivery queued.',
  retried: 'Dead letter retried.',
  resolved: 'Dead letter resolved.',
  reset: 'Breaker reset.',
  recovered: 'Deliveries brought back.',
};

/** A form's `datetime-local` value (no zone) read as UTC; an ISO time as it is; empty: absent. */
const utcTime = (value: string | undefined) => {
  if (value === undefined || value.trim() === '') return undefined;
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value) ? `${value.length === 16 ? `${value}:00` : value}Z` : value;
};

const pick = <T extends string>(value: string | undefined, allowed: readonly T[]): T | undefined => (allowed.includes(value as T) ? (value as T) : undefined);
const offsetOf = (value: string | undefined) => {
  const n = Number(value ?? 0);
  return Number.isSafeInteger(n) && n >= 0 && n <= 1_000_000 ? n : 0;
};
/** Only paths of the dashboard itself are followed after a form (no open redirect). */
const backTo = (value: unknown, fallback: string) => (typeof value === 'string' && /^\/dashboard(?:[/?]|$)/.test(value) && !value.includes('//') ? value : fallback);
const withNotice = (path: string, notice: string, n?: number) => `${path}${path.includes('?') ? '&' : '?'}notice=${notice}${n === undefined ? '' : `&n=${n}`}`;
const field = (form: DashEnv['Variables']['form'], name: string) => {
  const v = form[name];
  return typeof v === 'string' ? v : undefined;
};

/** The operator's console under /dashboard (README.md, Operations): server-rendered, no script, one CSRF token per session. */
/** The dashboard shows launches, so a key needs to read them (as the API's `launches:read` routes do). */
const canRead = (scopes: readonly string[]) => scopes.includes('launches:read') || scopes.includes('admin');

/** The caller's address: the socket's peer, or with TRUST_PROXY the caller its proxies name (docs/configuration.md). */
function clientAddress(c: Context): string {
  return clientAddressOf(c);
}

export function createDashboardRoutes(deps: DashboardDeps): Hono<DashEnv> {
  const app = new Hono<DashEnv>();

  /**
   * Failed sign-ins are counted per client address: once its budget is spent, every sign-in from
   * there waits, before any key is looked up. Never per key alone, whatever the attempt: anyone who
   * knows a key's first characters could then lock its holder out (a key is 32 random bytes, so
   * guessing one from many addresses gets nowhere). Returns the seconds to wait, or undefined.
   * `peek` looks without counting.
   */
  const signInWait = async (address: string, peek: boolean): Promise<number | undefined> => {
    const limiter = deps.signInLimiter;
    if (!limiter) return undefined;
    const verdict = await limiter.take(`sign-in-ip:${address}`, peek);
    return verdict.allowed ? undefined : verdict.resetSeconds;
  };
  const cookieBase = { path: '/dashboard', httpOnly: true, sameSite: 'Strict' as const, secure: deps.production };

  app.use('*', async function dashboardHeaders(c, next) {
    await next();
    c.header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    c.header('X-Frame-Options', 'DENY');
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'same-origin');
    c.header('Cache-Control', 'no-store');
  });

  app.use(
    '*',
    formBodyGuard({
      limitBytes: deps.bodyLimitBytes ?? 64 * 1024,
      refuse: (c, refusal) => c.html(<MessagePage title={refusal.status === 413 ? 'Too large' : 'Refused'} message={refusal.message} />, refusal.status),
    }),
  );

  app.get('/sign-in', (c) => {
    const csrf = newToken();
    setCookie(c, LOGIN, csrf, { ...cookieBase, maxAge: 3600 });
    return c.html(<SignInPage csrf={csrf} />);
  });

  app.post('/sign-in', async (c) => {
    const form = await c.req.parseBody();
    const csrf = newToken();
    const key = typeof form.key === 'string' ? form.key.trim() : '';
    const address = clientAddress(c);
    const again = async (status: 401 | 403 | 429, error: string) => {
      if (status !== 429) await signInWait(address, false);
      setCookie(c, LOGIN, csrf, { ...cookieBase, maxAge: 3600 });
      return c.html(<SignInPage csrf={csrf} error={error} />, status);
    };
    // Per client address, so one client does not get far; another's failures never hold a key back.
    const wait = await signInWait(address, true);
    if (wait !== undefined) {
      c.header('Retry-After', String(wait));
      return again(429, `Too many sign-in attempts; try again in ${wait} s.`);
    }
    if (!sameToken(typeof form._csrf === 'string' ? form._csrf : undefined, getCookie(c, LOGIN))) return again(403, 'The form expired; please sign in again.');
    const row = key.startsWith('sk_') && key.length <= 200 ? await findActiveKey(deps.db, key) : undefined;
    if (!row) return again(401, 'That API key is not valid (or was revoked).');
    if (!canRead(row.scopes.split(','))) return again(403, 'This key cannot read launches: the dashboard needs a key with the launches:read or admin scope.');
    const token = await createSession(deps.db, { keyId: row.id, now: deps.clock.now(), ttlMs: deps.sessionTtlMs });
    deleteCookie(c, LOGIN, { path: '/dashboard' });
    setCookie(c, SESSION, token, { ...cookieBase, maxAge: Math.floor(deps.sessionTtlMs / 1000) });
    deps.logger.info({ component: 'dashboard', keyId: row.id, owner: row.owner }, 'dashboard sign-in');
    return c.redirect('/dashboard', 303);
  });

  // Everything below needs a live session; every POST below needs the session's CSRF token.
  app.use('*', async function requireSession(c, next) {
    const token = getCookie(c, SESSION);
    const user = token ? await findSession(deps.db, token, deps.clock.now()) : undefined;
    // A key that cannot read launches has no session (sign-in refuses it); this holds for any older one.
    if (!user || !canRead(user.scopes)) {
      if (token) deleteCookie(c, SESSION, { path: '/dashboard' });
      return c.redirect('/dashboard/sign-in', 303);
    }
    c.set('user', user);
    if (c.req.method === 'POST') {
      const form = await c.req.parseBody({ all: true });
      const presented = form._csrf;
      if (!sameToken(typeof presented === 'string' ? presented : undefined, user.csrf)) {
        return c.html(<MessagePage title="Refused" message="This form has no valid CSRF token; reload the page and try again." />, 403);
      }
      c.set('form', form);
    }
    await next();
  });

  const user = (c: Context<DashEnv>) => c.get('user') as DashboardUser;
  const page = (c: Context<DashEnv>, title: string, path: string, body: Child) => {
    const notice = NOTICES[c.req.query('notice') ?? ''];
    const n = Number(c.req.query('n'));
    // A count after the notice when several were done (a recover's count always: it may be none).
    const counted = c.req.query('notice') === 'recovered' ? n >= 0 : n > 1;
    const flash = notice && Number.isSafeInteger(n) && counted ? `${notice} (${n})` : notice;
    return c.html(
      <Layout title={title} user={user(c)} path={path} flash={flash}>
        {body}
      </Layout>,
    );
  };
  const adminOnly = (c: Context<DashEnv>) => {
    if (!user(c).isAdmin) throw new NotFoundError('This page needs an admin key');
  };

  app.post('/sign-out', async (c) => {
    const token = getCookie(c, SESSION);
    if (token) await deleteSession(deps.db, token);
    deleteCookie(c, SESSION, { path: '/dashboard' });
    return c.redirect('/dashboard/sign-in', 303);
  });

  app.get('/', async (c) => {
    const [data, health] = await Promise.all([loadOverview(deps.db, user(c), deps.clock.now()), deps.health()]);
    const breakers = user(c).isAdmin ? listBreakers(deps.breakers.list()) : [];
    return page(c, 'Overview', '/dashboard', <OverviewPage user={user(c)} data={data} health={health} breakers={breakers} />);
  });

  app.get('/funding', async (c) => {
    const balanceOf = deps.balanceOf ?? (() => Promise.reject(new Error('no chain')));
    const data = await loadFunding(deps.db, user(c), balanceOf, deps.balanceTimeoutMs ?? 1500, deps.ownerLimits ?? DEFAULT_OWNER_LIMITS);
    return page(c, 'Funding', '/dashboard/funding', <FundingPage user={user(c)} data={data} cluster={deps.explorerCluster} />);
  });

  app.get('/launches', async (c) => {
    const filter = { status: pick(c.req.query('status'), LAUNCH_STATUSES) as LaunchStatus | undefined, owner: c.req.query('owner')?.slice(0, 100) || undefined, offset: offsetOf(c.req.query('offset')) };
    const rows = await listLaunchesPage(deps.db, user(c), filter);
    return page(c, 'Launches', '/dashboard/launches', <LaunchesPage user={user(c)} rows={rows} filter={filter} />);
  });

  app.get('/launches/:id', async (c) => {
    const detail = await loadLaunch(deps.db, c.req.param('id'));
    // Another owner's launch is "not found", as in the API.
    if (!detail || !canSee(user(c), detail.launch.owner)) throw new NotFoundError(`Launch ${c.req.param('id').slice(0, 80)} not found`);
    return page(c, detail.launch.id, '/dashboard/launches', <LaunchPage user={user(c)} detail={detail} cluster={deps.explorerCluster} openEndpoints={openBreakerEndpoints(deps.breakers.list())} now={deps.clock.now()} />);
  });

  app.get('/deliveries', async (c) => {
    const filter = { status: pick(c.req.query('status'), DELIVERY_FILTERS) as DeliveryFilterStatus | undefined, offset: offsetOf(c.req.query('offset')) };
    const openEndpoints = openBreakerEndpoints(deps.breakers.list());
    const rows = await listDeliveriesPage(deps.db, user(c), filter, openEndpoints);
    const attempts = await attemptsByDelivery(deps.db, rows.map((r) => r.id));
    return page(c, 'Deliveries', '/dashboard/deliveries', <DeliveriesPage user={user(c)} rows={rows} attempts={attempts} filter={filter} openEndpoints={openEndpoints} />);
  });

  app.post('/deliveries/:id/redeliver', async (c) => {
    const u = user(c);
    const original = await getDelivery(deps.db, c.req.param('id'));
    if (!original || !canSee(u, original.owner)) throw new NotFoundError('Delivery not found');
    if (!u.isAdmin && !u.scopes.includes('launches:write')) throw new NotFoundError('Redelivery needs the launches:write scope');
    await redeliverEvent(deps.db, deps.clock, { eventId: original.event_id, launchId: original.launch_id, deliveryId: original.id }, deps.maxRedeliveries);
    deps.signal.notify();
    return c.redirect(withNotice(backTo(field(c.get('form'), 'back'), '/dashboard/deliveries'), 'redelivered'), 303);
  });

  app.get('/endpoints', async (c) => {
    const rows = await listEndpointsPage(deps.db, user(c));
    return page(c, 'Endpoints', '/dashboard/endpoints', <EndpointsPage rows={rows} user={user(c)} />);
  });

  app.get('/endpoints/:id', async (c) => {
    const detail = await loadEndpoint(deps.db, user(c), c.req.param('id'), deps.clock.now());
    // Another owner's endpoint is "not found", as in the API.
    if (!detail) throw new NotFoundError(`Webhook endpoint ${c.req.param('id').slice(0, 80)} not found`);
    return page(c, 'Endpoint', '/dashboard/endpoints', <EndpointPage detail={detail} user={user(c)} now={deps.clock.now()} />);
  });

  app.post('/endpoints/:id/recover', async (c) => {
    const u = user(c);
    if (!u.isAdmin && !u.scopes.includes('launches:write')) throw new NotFoundError('Recovering needs the launches:write scope');
    const form = c.get('form');
    const since = utcTime(field(form, 'since'));
    const until = utcTime(field(form, 'until'));
    const window = parseRecover(until === undefined ? { since } : { since, until }, deps.clock.now());
    const id = c.req.param('id');
    const ids = await recoverEndpoint({ db: deps.db, clock: deps.clock }, id, u.isAdmin ? undefined : u.owner, window);
    deps.signal.notify();
    return c.redirect(withNotice(`/dashboard/endpoints/${encodeURIComponent(id)}`, 'recovered', ids.length), 303);
  });

  app.get('/dead-letters', async (c) => {
    adminOnly(c);
    const filter = {
      kind: pick(c.req.query('kind'), DEAD_LETTER_KINDS),
      status: pick(c.req.query('status'), DEAD_LETTER_STATUSES),
      offset: offsetOf(c.req.query('offset')),
    };
    const rows = await listDeadLettersPage(deps.db, filter);
    return page(c, 'Dead letters', '/dashboard/dead-letters', <DeadLettersPage user={user(c)} rows={rows} filter={filter} />);
  });

  const actions = deps.deadLetters;
  const findDeadLetter = async (id: string) => {
    const dl = await getDeadLetter(deps.db, id);
    if (!dl) throw new NotFoundError(`Dead letter ${id.slice(0, 80)} not found`);
    return dl;
  };

  app.post('/dead-letters/retry', async (c) => {
    adminOnly(c);
    const form = c.get('form');
    const ids = ([] as unknown[]).concat(form.ids ?? []).filter((v): v is string => typeof v === 'string').slice(0, 200);
    if (ids.length === 0) throw new ConflictError('Select at least one dead letter to retry');
    let retried = 0;
    const failures: string[] = [];
    for (const id of ids) {
      try {
        await retryDeadLetter(actions, await findDeadLetter(id));
        retried++;
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        failures.push(error.message);
      }
    }
    if (failures.length > 0 && retried === 0) throw new ConflictError(failures.join(' '));
    return c.redirect(withNotice(backTo(field(form, 'back'), '/dashboard/dead-letters'), 'retried', retried), 303);
  });

  app.post('/dead-letters/:id/retry', async (c) => {
    adminOnly(c);
    await retryDeadLetter(actions, await findDeadLetter(c.req.param('id')));
    return c.redirect(withNotice(backTo(field(c.get('form'), 'back'), '/dashboard/dead-letters'), 'retried'), 303);
  });

  app.post('/dead-letters/:id/resolve', async (c) => {
    adminOnly(c);
    await resolveDeadLetter(actions, await findDeadLetter(c.req.param('id')));
    return c.redirect(withNotice(backTo(field(c.get('form'), 'back'), '/dashboard/dead-letters'), 'resolved'), 303);
  });

  app.get('/breakers', async (c) => {
    adminOnly(c);
    const breakers = listBreakers(deps.breakers.list());
    return page(c, 'Breakers', '/dashboard/breakers', <BreakersPage user={user(c)} breakers={breakers} />);
  });

  app.post('/breakers/reset', async (c) => {
    adminOnly(c);
    const host = field(c.get('form'), 'host') ?? '';
    if ((await deps.breakers.reset(host)).length === 0) throw new NotFoundError(`No breaker for ${host.slice(0, 200)}`);
    deps.signal.notify();
    return c.redirect(withNotice('/dashboard/breakers', 'reset'), 303);
  });

  app.notFound((c) => c.html(<MessagePage title="Not found" message={`No page at ${c.req.path.slice(0, 200)}`} />, 404));
  app.onError((error, c) => {
    if (error instanceof NotFoundError) return c.html(<MessagePage title="Not found" message={error.message} />, 404);
    if (error instanceof DomainError) return c.html(<MessagePage title="Not done" message={withFields(error)} />, 409);
    deps.logger.error({ err: error, component: 'dashboard' }, 'dashboard page failed');
    return c.html(<MessagePage title="Error" message="Something went wrong; it has been logged." />, 500);
  });
  return app;
}

/** A refusal's message with what each refused field needed (a form's `since must not be in the future`). */
function withFields(error: DomainError): string {
  const fields = (error.details as { fields?: Array<{ field: string; message: string }> } | undefined)?.fields;
  return Array.isArray(fields) && fields.length > 0 ? `${error.message}: ${fields.map((f) => `${f.field} ${f.message}`).join('; ')}` : error.message;
}
