import pg from 'pg';

/**
 * Cross-instance wake-ups (docs/architecture.md, SQLite and PostgreSQL). With several instances on one PostgreSQL database, work one
 * instance commits (an event's deliveries, a queued launch) is often claimed by another, which would
 * otherwise find it only at its next poll; a breaker one instance opened or closed should stop or
 * free the others' attempts before their next read of the breakers table. Each instance `LISTEN`s on one channel over a dedicated
 * connection (not a pooled one: a pooled connection is handed to other queries and its LISTEN would
 * come and go) and `NOTIFY`s after its own commits. A notification only cuts a poll loop's sleep
 * short; polling stays the fallback, so a lost notification (the listen connection dropped and is
 * being re-opened) costs at most one poll interval. On SQLite there is one process and wake-ups are
 * in-process already: {@link noWakeups}.
 */
export type WakeKind = 'deliveries' | 'launches' | 'breakers' | 'watches';

export interface Wakeups {
  /** Tells the other instances that `kind` work was committed (coalesced: at most one NOTIFY in flight per kind). */
  publish(kind: WakeKind): void;
  /** Runs `handler` when another instance publishes `kind`, and after the listen connection is re-opened. */
  on(kind: WakeKind, handler: () => void): void;
  /** Opens the listen connection (resolves once it listens; a failure is retried in the background). */
  start(): Promise<void>;
  close(): Promise<void>;
}

export const noWakeups: Wakeups = {
  publish: () => undefined,
  on: () => undefined,
  start: async () => undefined,
  close: async () => undefined,
};

export const WAKE_CHANNEL = 'launch_service_wake';
const KINDS: readonly WakeKind[] = ['deliveries', 'launches', 'breakers', 'watches'];

/** What the wake-ups log (pino's shape; `db/` sits beside `lib/` and does not import it). */
export interface WakeupsLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface PostgresWakeupsOptions {
  /** The database's postgres:// URL (the listen connection is opened from it). */
  url: string;
  /** This instance's id: its own notifications come back to it and are ignored. */
  instanceId: string;
  logger: WakeupsLogger;
  /** Runs one statement on the shared pool (the NOTIFY); the service passes its kysely database. */
  execute(statement: { text: string; values: unknown[] }): Promise<unknown>;
  /** First and longest wait before re-opening a dropped listen connection (default 250 ms .. 10 s). */
  reconnectMs?: { min: number; max: number };
}

export function createPostgresWakeups(options: PostgresWakeupsOptions): Wakeups {
  const log = { warn: (fields: Record<string, unknown>, message: string) => options.logger.warn({ component: 'wakeups', ...fields }, message) };
  const handlers = new Map<WakeKind, Array<() => void>>(KINDS.map((k) => [k, []]));
  const publishing = new Map<WakeKind, 'idle' | 'sending' | 'again'>(KINDS.map((k) => [k, 'idle']));
  const reconnect = options.reconnectMs ?? { min: 250, max: 10_000 };
  let client: pg.Client | undefined;
  let closed = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let opening: Promise<void> | undefined;

  const fire = (kind: WakeKind) => {
    for (const handler of handlers.get(kind) ?? []) handler();
  };

  function send(kind: WakeKind): void {
    publishing.set(kind, 'sending');
    options
      .execute({ text: 'select pg_notify($1, $2)', values: [WAKE_CHANNEL, `${kind}:${options.instanceId}`] })
      .catch((error: unknown) => log.warn({ err: error, kind }, 'wake-up notification not sent; the other instances find the work at their next poll'))
      .finally(() => {
        if (publishing.get(kind) === 'again' && !closed) send(kind);
        else publishing.set(kind, 'idle');
      });
  }

  function scheduleReconnect(): void {
    if (closed || retryTimer) return;
    const delay = Math.min(reconnect.max, reconnect.min * 2 ** Math.min(failures, 16));
    failures += 1;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void open().catch(() => undefined);
    }, delay);
    retryTimer.unref();
  }

  function open(): Promise<void> {
    opening ??= (async () => {
      const c = new pg.Client({ connectionString: options.url });
      const dropped = (error?: unknown) => {
        if (client !== c) return;
        client = undefined;
        c.removeAllListeners('notification');
        void c.end().catch(() => undefined);
        if (!closed) {
          log.warn({ err: error }, 'wake-up listen connection lost; re-opening it (polling covers the gap)');
          scheduleReconnect();
        }
      };
      c.on('error', dropped);
      c.on('end', () => dropped());
      c.on('notification', (msg) => {
        if (msg.channel !== WAKE_CHANNEL || !msg.payload) return;
        const [kind, from] = msg.payload.split(':', 2) as [WakeKind, string];
        if (from !== options.instanceId && handlers.has(kind)) fire(kind);
      });
      try {
        await c.connect();
        await c.query(`listen ${WAKE_CHANNEL}`);
      } catch (error) {
        void c.end().catch(() => undefined);
        if (!closed) {
          log.warn({ err: error }, 'wake-up listen connection could not be opened; retrying (polling covers the gap)');
          scheduleReconnect();
        }
        throw error;
      }
      if (closed) {
        await c.end().catch(() => undefined);
        return;
      }
      client = c;
      const reopened = failures > 0;
      failures = 0;
      // Anything published while the connection was down was missed: look now rather than at the next poll.
      if (reopened) for (const kind of KINDS) fire(kind);
    })().finally(() => (opening = undefined));
    return opening;
  }

  return {
    publish(kind) {
      if (closed) return;
      const state = publishing.get(kind);
      if (state === 'idle') send(kind);
      else publishing.set(kind, 'again');
    },
    on(kind, handler) {
      handlers.get(kind)?.push(handler);
    },
    async start() {
      await open().catch(() => undefined);
    },
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      await opening?.catch(() => undefined);
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners('notification');
        await c.end().catch(() => undefined);
      }
    },
  };
}
