import { sql } from 'kysely';
import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import type { LaunchRow, StepRow } from '../db/schema.js';
import { parseJson } from '../lib/json.js';
import type { AttemptRow } from '../webhooks/sql/attempts.js';
import { displayUrl } from '../webhooks/present.js';
import { DeliveryTable, attemptsByDelivery, type DeliveryListRow } from './deliveryTable.js';
import { Address, Amount, Badge, duration, formatUnits, inWords, time } from './layout.js';
import type { DashboardUser } from './session.js';

export interface LaunchDetail {
  launch: LaunchRow;
  steps: StepRow[];
  events: Array<{ id: string; sequence: number; event: string; body: string; created_at: number }>;
  deliveries: LaunchDeliveryRow[];
  attempts: Map<string, AttemptRow[]>;
  watches: WatchRow[] | null;
  /** A creator-signed launch's signing round (docs/signing.md); null for the service's own. */
  signing: SigningSummary | null;
}

export interface SigningSummary {
  creator: string;
  /** 'setup': the nonce accounts' transaction is offered; 'launch': the launch's transactions are; 'signed'. */
  phase: string;
  deadlineAt: number;
  signed: number;
  offered: number;
}

export type LaunchDeliveryRow = DeliveryListRow & { event_id: string };

interface WatchRow {
  kind: string;
  address: string;
  state: string;
  last_activity_at: number | null;
  next_check_at: number;
  ends_at: number;
  ended_reason: string | null;
}

/** The most deliveries and events the launch page shows (the API's deliveries and events lists page through all). */
export const LAUNCH_ROWS = 200;

/** A launch with its steps, event log, deliveries with attempts (the first {@link LAUNCH_ROWS} of each), and watches. */
export async function loadLaunch(db: Db, id: string): Promise<LaunchDetail | undefined> {
  const launch = await db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirst();
  if (!launch) return undefined;
  const steps = await db.selectFrom('launch_steps').selectAll().where('launch_id', '=', id).orderBy('position').execute();
  const events = await db
    .selectFrom('outbox_events')
    .select(['id', 'sequence', 'event', 'body', 'created_at'])
    .where('launch_id', '=', id)
    .orderBy('sequence')
    .limit(LAUNCH_ROWS)
    .execute();
  const deliveries = await db
    .selectFrom('deliveries as d')
    .innerJoin('outbox_events as e', 'e.id', 'd.event_id')
    .select(['d.id', 'd.launch_id', 'd.event_id', 'e.event', 'e.sequence', 'd.url', 'd.endpoint', 'd.status', 'd.attempt_count', 'd.next_attempt_at', 'd.last_error', 'd.created_at'])
    .where('d.launch_id', '=', id)
    .orderBy('e.sequence')
    .orderBy('d.created_at')
    .orderBy('d.id')
    .limit(LAUNCH_ROWS)
    .execute();
  // The watches table exists on every migrated database (migration 008).
  const watches = (await sql<WatchRow>`select kind, address, state, last_activity_at, next_check_at, ends_at, ended_reason from watches where launch_id = ${id} order by created_at, id`.execute(db)).rows;
  return { launch, steps, events, deliveries, attempts: await attemptsByDelivery(db, deliveries.map((d) => d.id)), watches, signing: await signingOf(db, id) };
}

/** What the creator has signed of a creator-signed launch so far. */
async function signingOf(db: Db, id: string): Promise<SigningSummary | null> {
  const signing = await db.selectFrom('launch_signing').select(['creator', 'phase', 'deadline_at']).where('launch_id', '=', id).executeTakeFirst();
  if (!signing) return null;
  const txs = await db.selectFrom('launch_signing_txs').select('signature').where('launch_id', '=', id).execute();
  return { creator: signing.creator, phase: signing.phase, deadlineAt: Number(signing.deadline_at), signed: txs.filter((t) => t.signature !== null).length, offered: txs.length };
}

interface Tx {
  signature?: string;
  type?: string;
}

const Json: FC<{ value: unknown }> = ({ value }) => <pre class="mono">{JSON.stringify(value, null, 2)}</pre>;

/** Explorer link for a transaction or an address on the configured cluster. */
export const explorerUrl = (cluster: string, kind: 'tx' | 'address', value: string) => `https://explorer.solana.com/${kind}/${encodeURIComponent(value)}?cluster=${encodeURIComponent(cluster)}`;

const isAddress = (v: unknown): v is string => typeof v === 'string' && /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(v);

/** How a result field is shown: its label, and whether its value is tokens, lamports, a unix time or seconds. */
const LABELS: Record<string, string> = {
  mint: 'Mint',
  metadata: 'Metadata account',
  allocations: 'Allocations',
  vestingContract: 'Vesting contract',
  vesting: 'Vesting',
  escrow: 'Escrow',
  escrowTokenAccount: 'Escrow token account',
  programId: 'Program',
  recipient: 'Beneficiary',
  amount: 'Amount',
  schedule: 'Schedule',
  startTime: 'Starts',
  cliffTime: 'Cliff',
  frequencySeconds: 'Unlock every',
  cliffUnlockAmount: 'Unlocked at the cliff',
  amountPerPeriod: 'Unlocked per period',
  numberOfPeriods: 'Periods',
  dao: 'DAO',
  realm: 'Realm',
  governance: 'Governance',
  treasury: 'Treasury',
  treasuryTokenAccount: 'Treasury token account',
  treasuryAmount: 'Treasury holds',
  communityMint: 'Community mint',
  name: 'Name',
  pool: 'Pool',
  address: 'Pool state',
  lpMint: 'LP mint',
  ammConfig: 'AMM config',
  token0Mint: 'Token 0 mint',
  token1Mint: 'Token 1 mint',
  token0Vault: 'Token 0 vault',
  token1Vault: 'Token 1 vault',
  lpRecipient: 'LP recipient',
  lpTokenAccount: 'LP token account',
  lpAmount: 'LP tokens',
  quoteLamports: 'Quote deposited',
  kind: 'Kind',
  owner: 'Owner',
  tokenAccount: 'Token account',
};
const TOKEN_KEYS = new Set(['amount', 'cliffUnlockAmount', 'amountPerPeriod', 'treasuryAmount']);
/** Accounts an operator rarely needs at a glance: folded under "More accounts" in their group. */
const SECONDARY = new Set(['programId', 'escrowTokenAccount', 'mint', 'treasuryTokenAccount', 'communityMint', 'ammConfig', 'token0Mint', 'token1Mint', 'token0Vault', 'token1Vault', 'lpTokenAccount']);
const label = (key: string) => LABELS[key] ?? key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase());

interface Units {
  cluster: string;
  decimals: number;
  ticker: string;
}

/** One result value: an address whole with its explorer link, an amount in tokens, a time, or text. */
const Value: FC<{ name: string; value: unknown; units: Units }> = ({ name, value, units }) => {
  if (isAddress(value)) return <Address value={value} href={explorerUrl(units.cluster, 'address', value)} />;
  if (TOKEN_KEYS.has(name) && (typeof value === 'string' || typeof value === 'number')) return <Amount base={value} decimals={units.decimals} unit={units.ticker} />;
  if (name === 'quoteLamports' && typeof value === 'string') return <Amount base={value} decimals={9} unit="SOL" />;
  if (name === 'lpAmount' && typeof value === 'string') return <abbr title={`${value} base units of the LP mint`}>{`${formatUnits(value, 0)} base units`}</abbr>;
  if ((name === 'startTime' || name === 'cliffTime') && typeof value === 'number') return <>{time(value * 1000)}</>;
  if (name === 'frequencySeconds' && typeof value === 'number') return <>{inWords(value * 1000)}</>;
  if (value === null || value === undefined) return <span class="muted">—</span>;
  if (typeof value === 'object') return <Json value={value} />;
  return <>{String(value)}</>;
};

/** Labelled fields of one object; nested objects become their own group, a list of allocations a table. */
const Fields: FC<{ value: Record<string, unknown>; units: Units; id?: string; top?: boolean }> = ({ value, units, id, top }) => {
  const flat = Object.entries(value).filter(([, v]) => v === null || typeof v !== 'object');
  const nested = Object.entries(value).filter(([, v]) => v !== null && typeof v === 'object');
  const field = ([k, v]: [string, unknown]) => (
    <div data-field={k}>
      <dt>{label(k)}</dt>
      <dd>
        <Value name={k} value={v} units={units} />
      </dd>
    </div>
  );
  const main = top ? flat : flat.filter(([k]) => !SECONDARY.has(k));
  const more = top ? [] : flat.filter(([k]) => SECONDARY.has(k));
  return (
    <>
      {flat.length > 0 && (
        <dl class="fields" id={id}>
          {main.map(field)}
          {more.length > 0 && (
            <details>
              <summary>{`More accounts (${more.length})`}</summary>
              <dl class="fields">{more.map(field)}</dl>
            </details>
          )}
        </dl>
      )}
      {nested.map(([k, v]) => (
        <>
          <h3 class="group">{label(k)}</h3>
          {Array.isArray(v) ? <Rows rows={v} units={units} /> : <Fields value={v as Record<string, unknown>} units={units} id={id ? `${id}-${k}` : undefined} />}
        </>
      ))}
    </>
  );
};

/** A list of objects (the supply's allocations) as one table. */
const Rows: FC<{ rows: unknown[]; units: Units }> = ({ rows, units }) => {
  const objects = rows.filter((r): r is Record<string, unknown> => r !== null && typeof r === 'object');
  if (objects.length === 0) return <Json value={rows} />;
  const keys = [...new Set(objects.flatMap((r) => Object.keys(r)))];
  return (
    <div class="scroll">
      <table class="rows">
        <tr>
          {keys.map((k) => (
            <th>{label(k)}</th>
          ))}
        </tr>
        {objects.map((r) => (
          <tr>
            {keys.map((k) => (
              <td>
                <Value name={k} value={r[k]} units={units} />
              </td>
            ))}
          </tr>
        ))}
      </table>
    </div>
  );
};

const stepLabel = (name: string) => name.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());

/** The steps as a timeline: each with its state, timing, attempts, transactions and (when it failed) its error. */
const Timeline: FC<{ steps: StepRow[]; cluster: string }> = ({ steps, cluster }) => (
  <ol class="timeline" id="steps">
    {steps.map((s) => {
      const error = parseJson<{ code?: string; message?: string } | null>(s.error, null);
      return (
        <li class={`step-${s.status}`} data-step={s.name}>
          <div class="step-head">
            <span class="step-name">{stepLabel(s.name)}</span>
            <Badge value={s.status} />
            <span class="muted">
              {s.started_at !== null ? time(s.started_at) : 'not started'}
              {s.started_at !== null && s.completed_at !== null ? ` · took ${duration(s.completed_at - s.started_at)}` : ''}
              {s.attempts > 1 ? ` · ${s.attempts} attempts` : ''}
              {s.status === 'waiting' && s.next_attempt_at !== null ? ` · next try ${time(s.next_attempt_at)}` : ''}
            </span>
            {parseJson<Tx[]>(s.transactions, []).map((tx) =>
              tx.signature ? (
                <span class="muted">
                  {`${tx.type ?? 'transaction'} `}
                  <a href={explorerUrl(cluster, 'tx', tx.signature)} rel="noreferrer" target="_blank" class="mono" title={tx.signature}>
                    {`${tx.signature.slice(0, 16)}…`}
                  </a>
                </span>
              ) : (
                ''
              ),
            )}
          </div>
          {s.status === 'failed' && error && <div class="flash error">{`${error.code ?? 'error'}: ${error.message ?? ''}`}</div>}
        </li>
      );
    })}
  </ol>
);

/** Deliveries of one event to one destination: the newest is the row, earlier ones (redeliveries) its history. */
function byEvent(deliveries: LaunchDeliveryRow[]): { rows: LaunchDeliveryRow[]; history: Map<string, LaunchDeliveryRow[]> } {
  const groups = new Map<string, LaunchDeliveryRow[]>();
  for (const d of deliveries) {
    const key = `${d.event_id}\u0000${d.url}`;
    groups.set(key, [...(groups.get(key) ?? []), d]);
  }
  const rows: LaunchDeliveryRow[] = [];
  const history = new Map<string, LaunchDeliveryRow[]>();
  for (const group of groups.values()) {
    group.sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id));
    const newest = group.at(-1)!;
    rows.push(newest);
    if (group.length > 1) history.set(newest.id, group.slice(0, -1));
  }
  return { rows, history };
}

export const LaunchPage: FC<{ user: DashboardUser; detail: LaunchDetail; cluster: string; openEndpoints: ReadonlySet<string>; now: number }> = ({ user, detail, cluster, openEndpoints, now }) => {
  const { launch, steps } = detail;
  const request = parseJson<Record<string, unknown>>(launch.request, {});
  const results = parseJson<Record<string, unknown>>(launch.results, {});
  const error = parseJson<{ code?: string; message?: string; step?: string | null } | null>(launch.error, null);
  const decimals = typeof request.decimals === 'number' ? request.decimals : 0;
  const ticker = String(request.ticker ?? 'tokens');
  const units: Units = { cluster, decimals, ticker };
  const supply = typeof request.totalSupply === 'string' || typeof request.totalSupply === 'number' ? String(request.totalSupply) : undefined;
  const finished = launch.completed_at;
  const deliveries = byEvent(detail.deliveries);
  const hasResults = Object.keys(results).length > 0;
  const urls = new Set(deliveries.rows.map((d) => d.url));
  const oneUrl = urls.size === 1 ? [...urls][0] : undefined;
  return (
    <>
      <h1>
        {String(request.name ?? 'Launch')} <span class="muted">{request.ticker ? `(${String(request.ticker)})` : ''}</span> <Badge value={launch.status} />
      </h1>
      <dl class="fields" id="summary">
        <div data-field="status">
          <dt>Status</dt>
          <dd>
            <Badge value={launch.status} />
            {launch.status === 'failed' && error?.step ? ` at ${stepLabel(error.step)}` : ''}
          </dd>
        </div>
        <div data-field="owner">
          <dt>Owner</dt>
          <dd>{launch.owner}</dd>
        </div>
        <div data-field="token">
          <dt>Token</dt>
          <dd>
            {`${String(request.name ?? '')} (${ticker})`}
            <div class="muted">
              {supply !== undefined ? `${formatUnits(supply, 0)} ${ticker}` : ''}
              {` · ${decimals} decimals · ${String(request.tokenStandard ?? '')}`}
            </div>
          </dd>
        </div>
        {detail.signing && (
          <div data-field="signing">
            <dt>Signing</dt>
            <dd>
              {`creator-signed: ${detail.signing.signed} of ${detail.signing.offered} signed`}
              {launch.status === 'awaiting_signatures' && (
                <strong>{` · waiting for the creator's signatures (${detail.signing.phase === 'setup' ? 'setup round' : 'launch round'}) until ${time(detail.signing.deadlineAt)}`}</strong>
              )}
              <div class="muted mono">{detail.signing.creator}</div>
            </dd>
          </div>
        )}
        <div data-field="id">
          <dt>Launch</dt>
          <dd class="mono">{launch.id}</dd>
        </div>
        <div data-field="created">
          <dt>Created</dt>
          <dd>{time(launch.created_at)}</dd>
        </div>
        <div data-field="finished">
          <dt>Finished</dt>
          <dd>{finished === null ? <span class="muted">not yet</span> : time(finished)}</dd>
        </div>
        <div data-field="duration">
          <dt>Duration</dt>
          <dd>{finished === null ? `${inWords(now - launch.created_at)} so far` : duration(finished - launch.created_at)}</dd>
        </div>
      </dl>
      {launch.status === 'failed' && error !== null && (
        <>
          <h2>Error</h2>
          <dl class="fields alert" id="error">
            <div data-field="code">
              <dt>Code</dt>
              <dd class="mono">{error.code ?? '—'}</dd>
            </div>
            <div data-field="step">
              <dt>Step</dt>
              <dd>{error.step ? stepLabel(error.step) : '—'}</dd>
            </div>
            <div data-field="message" class="wide">
              <dt>Message</dt>
              <dd>{error.message ?? '—'}</dd>
            </div>
          </dl>
        </>
      )}
      {hasResults && (
        <>
          <h2>{launch.status === 'complete' ? 'Results' : 'Partial results'}</h2>
          <Fields value={results} units={units} id="results" top />
        </>
      )}
      <h2>Steps</h2>
      <Timeline steps={steps} cluster={cluster} />
      {detail.watches !== null && detail.watches.length > 0 && (
        <>
          <h2>Watches</h2>
          <div class="scroll">
            <table id="watches">
              <tr>
                <th>Kind</th>
                <th>Address</th>
                <th>State</th>
                <th>Last activity</th>
                <th>Next check</th>
                <th>Ends</th>
              </tr>
              {detail.watches.map((w) => (
                <tr>
                  <td>{w.kind}</td>
                  <td>
                    <Address value={w.address} href={explorerUrl(cluster, 'address', w.address)} />
                  </td>
                  <td>
                    <Badge value={w.state} /> {w.ended_reason ?? ''}
                  </td>
                  <td>{time(w.last_activity_at)}</td>
                  <td>{w.state === 'active' ? time(w.next_check_at) : '—'}</td>
                  <td>{time(w.ends_at)}</td>
                </tr>
              ))}
            </table>
          </div>
        </>
      )}
      {deliveries.rows.length > 0 && (
        <>
          <h2>Webhook deliveries</h2>
          {oneUrl !== undefined && <p class="muted mono">{`to ${displayUrl(oneUrl)}`}</p>}
          <DeliveryTable
            showEndpoint={oneUrl === undefined}
            user={user}
            rows={deliveries.rows}
            history={deliveries.history}
            attempts={detail.attempts}
            openEndpoints={openEndpoints}
            showLaunch={false}
            back={`/dashboard/launches/${launch.id}`}
          />
          {detail.deliveries.length === LAUNCH_ROWS && <p class="muted">The first {LAUNCH_ROWS} deliveries; the API's GET /api/launches/{launch.id}/deliveries pages through all.</p>}
        </>
      )}
      {detail.events.length > 0 && (
        <details id="event-log">
          <summary>{`Event log (${detail.events.length} event${detail.events.length === 1 ? '' : 's'}, each with its payload)`}</summary>
          <div class="scroll">
            <table id="events">
              <tr>
                <th>#</th>
                <th>Event</th>
                <th>Committed</th>
                <th>Payload</th>
              </tr>
              {detail.events.map((e) => (
                <tr>
                  <td>{e.sequence}</td>
                  <td>{e.event}</td>
                  <td>{time(e.created_at)}</td>
                  <td>
                    <details>
                      <summary>payload</summary>
                      <Json value={parseJson(e.body, e.body)} />
                    </details>
                  </td>
                </tr>
              ))}
            </table>
            {detail.events.length === LAUNCH_ROWS && <p class="muted">The first {LAUNCH_ROWS} events; the API's GET /api/launches/{launch.id}/events pages through all.</p>}
          </div>
        </details>
      )}
    </>
  );
};
