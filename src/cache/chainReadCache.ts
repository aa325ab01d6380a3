import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';

/** The chain reads the cache keeps warm; any chain backend provides them. */
export interface ChainReads {
  getLatestBlockhash(): Promise<{ blockhash: string; lastValidBlockHeight: number }>;
  getMinimumBalanceForRentExemption(size: number): Promise<number>;
}

export interface ChainReadSnapshot {
  blockhash: string;
  lastValidBlockHeight: number;
  /** Rent-exempt minimum by account size (mint, token account). */
  rent: Record<number, number>;
  refreshedAt: number;
}

const RENT_SIZES = [82, 165];

/**
 * Caches the chain reads every launch needs (latest blockhash, rent minimums).
 * Freshness rule: the snapshot is fresh while younger than `maxAgeMs`; `ensureFresh()` refreshes a
 * stale one and fails when the chain cannot be read, which is what the health `cache` check reports.
 */
export class ChainReadCache {
  private snapshot: ChainReadSnapshot | undefined;
  private lastError: string | undefined;
  private refreshing: Promise<ChainReadSnapshot> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly chain: ChainReads,
    private readonly clock: Clock,
    private readonly logger: Logger,
    readonly refreshIntervalMs = 10_000,
    readonly maxAgeMs = 30_000,
  ) {}

  /** Refreshes now (one refresh at a time). */
  refresh(): Promise<ChainReadSnapshot> {
    this.refreshing ??= this.load().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** The current snapshot, refreshed first when stale; rejects when it cannot be made fresh. */
  async ensureFresh(): Promise<ChainReadSnapshot> {
    const current = this.snapshot;
    if (current && this.clock.now() - current.refreshedAt < this.maxAgeMs) return current;
    return this.refresh();
  }

  /** Age of the snapshot in ms, or undefined before the first refresh. */
  ageMs(): number | undefined {
    return this.snapshot ? this.clock.now() - this.snapshot.refreshedAt : undefined;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.refresh().catch((error: unknown) => this.logger.warn({ err: error }, 'chain read cache refresh failed'));
    }, this.refreshIntervalMs);
    this.timer.unref();
    this.refresh().catch((error: unknown) => this.logger.warn({ err: error }, 'chain read cache refresh failed'));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async load(): Promise<ChainReadSnapshot> {
    try {
      const [latest, ...rents] = await Promise.all([
        this.chain.getLatestBlockhash(),
        ...RENT_SIZES.map((size) => this.chain.getMinimumBalanceForRentExemption(size)),
      ]);
      const rent: Record<number, number> = {};
      RENT_SIZES.forEach((size, i) => (rent[size] = rents[i] ?? 0));
      this.snapshot = { blockhash: latest.blockhash, lastValidBlockHeight: latest.lastValidBlockHeight, rent, refreshedAt: this.clock.now() };
      this.lastError = undefined;
      return this.snapshot;
    } catch (error) {
      this.lastError = error instanceof Error ? error.message : String(error);
      throw new Error(`chain reads could not be refreshed: ${this.lastError}`, { cause: error });
    }
  }
}
