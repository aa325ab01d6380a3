import type { FC } from 'hono/jsx';
import { effectiveBounds, readBoundOverrides, type BoundOverrides } from '../bounds/ownerBounds.js';
import type { OwnerLimits } from '../config/config.js';
import type { Db } from '../db/database.js';
import { listEntries, reservedLamports, type LedgerEntry } from '../funding/ledger.js';
import { limitsOf, readLimits, type FundingLimits } from '../funding/limits.js';
import { formatSol } from '../funding/sol.js';
import { selectWallets } from '../funding/wallets.js';
import { Address, Badge, time } from './layout.js';
import { explorerUrl } from './launch.js';
import type { DashboardUser } from './session.js';

/** How many owners' cards one page shows, and how many ledger entries each card. */
const OWNERS_PER_PAGE = 50;
const RECENT_ENTRIES = 10;

export interface FundingCard {
  owner: string;
  address: string;
  /** Read from the chain now; undefined when the chain did not answer within the timeout. */
  balance: bigint | undefined;
  reserved: bigint;
  limits: FundingLimits;
  /** The owner bounds that hold for the owner, and which of them an admin overrode. */
  bounds: OwnerLimits;
  overrides: BoundOverrides;
  entries: LedgerEntry[];
}

export interface FundingPageData {
  cards: FundingCard[];
  /** Owners with a wallet that this page does not show (an admin with very many owners). */
  more: number;
}

/** The balance read from the chain, or undefined when it takes longer than `timeoutMs` or fails. */
async function balanceWithin(read: () => Promise<bigint>, timeoutMs: number): Promise<bigint | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)));
  try {
    return await Promise.race([read().catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The funding card of every owner the user may see: an admin every owner with a wallet, any other
 * key its own owner's only. Balances are read in parallel, each bounded, so a slow chain costs the
 * page at most `timeoutMs` and shows "unavailable".
 */
export async function loadFunding(db: Db, user: DashboardUser, balanceOf: (address: string) => Promise<bigint>, timeoutMs: number, defaults: OwnerLimits): Promise<FundingPageData> {
  let query = selectWallets(db).orderBy('owner');
  if (!user.isAdmin) query = query.where('owner', '=', user.owner);
  const wallets = await query.limit(OWNERS_PER_PAGE + 1).execute();
  const shown = wallets.slice(0, OWNERS_PER_PAGE);
  const total = wallets.length > OWNERS_PER_PAGE ? Number((await db.selectFrom('funding_wallets').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n) : shown.length;
  const cards = await Promise.all(
    shown.map(async (w) => {
      const [balance, reserved, recent, overrides, limits] = await Promise.all([
        balanceWithin(() => balanceOf(w.address), timeoutMs),
        reservedLamports(db, w.owner),
        listEntries(db, w.owner, { limit: RECENT_ENTRIES, offset: 0 }),
        readBoundOverrides(db, w.owner),
        readLimits(db, w.owner),
      ]);
      return { owner: w.owner, address: w.address, balance, reserved, limits: limits ?? limitsOf(w), bounds: effectiveBounds(defaults, overrides), overrides, entries: recent.rows };
    }),
  );
  return { cards, more: total - shown.length };
}

/** An amount in SOL, its exact lamports in the tooltip. */
const Sol: FC<{ lamports: number | bigint | null | undefined; none?: string }> = ({ lamports, none = '—' }) =>
  lamports === null || lamports === undefined ? <span class="muted">{none}</span> : <abbr title={`${lamports.toLocaleString('en-US')} lamports`}>{formatSol(lamports)} SOL</abbr>;

/** One owner bound: its value, marked when an admin set it for this owner (else it is the configured default). */
const Bound: FC<{ card: FundingCard; bound: keyof OwnerLimits }> = ({ card, bound }) => (
  <span data-bound={bound} data-source={card.overrides[bound] === null ? 'default' : 'override'}>
    {card.bounds[bound]}
    {card.overrides[bound] === null ? <span class="muted"> (default)</span> : ' (set for this owner)'}
  </span>
);

const Card: FC<{ card: FundingCard; cluster: string }> = ({ card, cluster }) => {
  const available = card.balance === undefined ? undefined : card.balance > card.reserved ? card.balance - card.reserved : 0n;
  return (
    <section class="funding" data-owner={card.owner}>
      <h2>{card.owner}</h2>
      <dl class="fields">
        <div class="wide" data-field="address">
          <dt>Funding address</dt>
          <dd>
            <Address value={card.address} href={explorerUrl(cluster, 'address', card.address)} />
          </dd>
        </div>
        <div data-field="balance">
          <dt>Balance</dt>
          <dd>{card.balance === undefined ? <span class="muted">unavailable</span> : <Sol lamports={card.balance} />}</dd>
        </div>
        <div data-field="reserved">
          <dt>Reserved</dt>
          <dd>
            <Sol lamports={card.reserved} />
          </dd>
        </div>
        <div data-field="available">
          <dt>Available</dt>
          <dd>{available === undefined ? <span class="muted">unavailable</span> : <Sol lamports={available} />}</dd>
        </div>
        <div data-field="limits">
          <dt>Limits</dt>
          <dd>
            per launch <Sol lamports={card.limits.maxLamportsPerLaunch} none="none" />, per day <Sol lamports={card.limits.maxLamportsPerDay} none="none" />, launches a day{' '}
            {card.limits.maxLaunchesPerDay ?? <span class="muted">none</span>}, low balance at <Sol lamports={card.limits.lowBalanceLamports} none="none" />
          </dd>
        </div>
        <div class="wide" data-field="bounds">
          <dt>Bounds</dt>
          <dd>
            endpoints <Bound card={card} bound="endpoints" />, launches in flight <Bound card={card} bound="launchesInFlight" />, redeliveries per delivery{' '}
            <Bound card={card} bound="redeliveries" />
          </dd>
        </div>
      </dl>
      <h3 class="group">Recent ledger</h3>
      {card.entries.length === 0 ? (
        <p class="muted">No entries yet.</p>
      ) : (
        <div class="scroll">
          <table class="ledger">
            <tr>
              <th>At</th>
              <th>Kind</th>
              <th>Amount</th>
              <th>Launch</th>
              <th>Signature</th>
            </tr>
            {card.entries.map((e) => (
              <tr>
                <td>{time(Number(e.created_at))}</td>
                <td>
                  <Badge value={e.kind} />
                </td>
                <td>
                  <Sol lamports={BigInt(e.lamports)} />
                </td>
                <td>{e.launch_id === null ? '—' : <a href={`/dashboard/launches/${encodeURIComponent(e.launch_id)}`} class="mono">{e.launch_id}</a>}</td>
                <td>
                  {e.signature === null ? (
                    '—'
                  ) : (
                    <a href={explorerUrl(cluster, 'tx', e.signature)} rel="noreferrer" target="_blank" class="mono" title={e.signature}>
                      {`${e.signature.slice(0, 12)}…`}
                    </a>
                  )}
                </td>
              </tr>
            ))}
          </table>
        </div>
      )}
    </section>
  );
};

export const FundingPage: FC<{ user: DashboardUser; data: FundingPageData; cluster: string }> = ({ user, data, cluster }) => (
  <>
    <h1>Funding</h1>
    {data.cards.length === 0 ? (
      <p class="muted">{user.isAdmin ? 'No owner has a funding wallet yet.' : 'No funding wallet yet: it is made on the first launch, quote or GET /api/funding.'}</p>
    ) : (
      data.cards.map((card) => <Card card={card} cluster={cluster} />)
    )}
    {data.more > 0 && <p class="muted">{`${data.more} more owner(s) with a wallet are not shown.`}</p>}
  </>
);
