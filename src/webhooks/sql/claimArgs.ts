/**
 * What the claiming owner may have in flight to a host and to one of its endpoints: the cap less
 * the live leases of every other owner there, counted under the claim's lock
 * (dispatch/sendAllowance.ts says why that bounds every owner's attempts together).
 */
export interface SendAllowance {
  host: string;
  endpoint: string;
  hostAllowance: number;
  endpointAllowance: number;
}

/** What one delivery claim is asked for (sql/claimDeliveries.ts, the PostgreSQL claim function, the half-open trial). */
export interface ClaimArgs {
  /** The lease owner: the claiming dispatcher's id. */
  owner: string;
  now: number;
  leaseMs: number;
  /** At most this many deliveries (the free global in-flight slots). */
  limit: number;
  /** Per-host in-flight cap: a host's live leases of every dispatcher stay within it (plus `prefetch` while only this owner holds any there). */
  perHostCap: number;
  /** Per-endpoint in-flight cap (default: the per-host cap): an endpoint's live leases stay within it (plus the lesser of it and `prefetch`, likewise). */
  perEndpointCap?: number;
  /**
   * Deliveries per host leased beyond the in-flight cap, to wait in the dispatcher's local queue
   * (default 0: leases stay within the caps). What may be in flight is the cap less the other
   * owners' live leases: the claim reports it per host and endpoint ({@link SendAllowance}).
   */
  prefetch?: number;
  /** Lower caps of some endpoints (slow ones, see webhooks/endpointPace.ts), by endpoint. */
  endpointCaps?: ReadonlyMap<string, number>;
  /** At most this many deliveries of one owner (`deliveries.owner`) held by this dispatcher (default: no bound). */
  perOwnerCap?: number;
  /** Deliveries of each owner this dispatcher holds now (their slots are this claim's fair-share baseline). */
  ownerHeld?: ReadonlyMap<string, number>;
  /** Endpoints (breaker keys) whose breaker is not closed. */
  excludeEndpoints: string[];
  /** Claim only for this host (the half-open trial's endpoint's host). */
  onlyHost?: string;
  /** Attempts a delivery gets; one whose attempts are spent is never claimed (see failSpentDeliveriesIn). */
  maxAttempts: number;
  /** Deliveries this dispatcher is attempting now: never claimed again by it, even with an expired lease. */
  running?: readonly string[];
  /** Claim only for this endpoint (the half-open trial), the least recently touched delivery first. */
  onlyEndpoint?: string;
}
