/** What one delivery claim is asked for (sql/claimDeliveries.ts, the PostgreSQL claim function, the half-open trial). */
export interface ClaimArgs {
  /** The lease owner: the claiming dispatcher's id. */
  owner: string;
  now: number;
  leaseMs: number;
  /** At most this many deliveries (the free global in-flight slots). */
  limit: number;
  /** Per-host in-flight cap, counting live leases of every dispatcher. */
  perHostCap: number;
  /** Per-endpoint in-flight cap, counting live leases of every dispatcher (default: the per-host cap). */
  perEndpointCap?: number;
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
