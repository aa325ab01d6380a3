/** Pending work of one owner to one endpoint: what a claim shares slots between. */
export interface Lane {
  endpoint: string;
  owner: string;
  host: string;
  /** The lane's earliest pending due time (its first index entry, a leased one included). */
  dueAt: number;
}

export interface ShareInput {
  /** Lanes that may be claimed from now: due, breaker closed. */
  lanes: readonly Lane[];
  /** Slots to hand out. */
  limit: number;
  /** Free slots of each host (its cap minus every dispatcher's live leases); a host not listed has its whole cap. */
  hostFree(host: string): number;
  /** Free slots of each endpoint, the same way. */
  endpointFree(endpoint: string): number;
  /** Deliveries of the owner this dispatcher holds now. */
  ownerHeld(owner: string): number;
  /** At most this many held per owner. */
  perOwnerCap: number;
}

/**
 * Hands out free delivery slots one at a time (docs/architecture.md, "Limits and fairness"): each
 * to the owner that holds the fewest (what it held before this claim plus what this claim gave it),
 * and within that owner to its endpoint given the fewest in this claim, the earliest due first on a
 * tie; never past an owner's, an endpoint's or a host's cap. So the next free slot goes to the owner
 * with the least, an owner with only slow receivers fills no more than its cap, and an owner alone
 * takes every slot its caps allow (work-conserving). Returns how many deliveries to claim per lane.
 * Cost: limit × (owners + one owner's lanes), a few thousand steps for a full claim.
 */
export function shareSlots(input: ShareInput): Map<Lane, number> {
  const given = new Map<Lane, number>();
  const hostFree = new Map<string, number>();
  const endpointFree = new Map<string, number>();
  const byOwner = new Map<string, { load: number; room: number; firstDue: number; lanes: Lane[] }>();
  for (const lane of input.lanes) {
    let owner = byOwner.get(lane.owner);
    if (!owner) {
      const held = input.ownerHeld(lane.owner);
      owner = { load: held, room: input.perOwnerCap - held, firstDue: lane.dueAt, lanes: [] };
      byOwner.set(lane.owner, owner);
    }
    owner.lanes.push(lane);
    owner.firstDue = Math.min(owner.firstDue, lane.dueAt);
    if (!hostFree.has(lane.host)) hostFree.set(lane.host, input.hostFree(lane.host));
    if (!endpointFree.has(lane.endpoint)) endpointFree.set(lane.endpoint, input.endpointFree(lane.endpoint));
  }
  const open = (lane: Lane) => (hostFree.get(lane.host) ?? 0) > 0 && (endpointFree.get(lane.endpoint) ?? 0) > 0;
  let left = input.limit;
  const owners = [...byOwner.values()].filter((o) => o.room > 0);
  while (left > 0 && owners.length > 0) {
    // The owner holding the fewest; on a tie the one whose work came due first.
    let at = 0;
    for (let i = 1; i < owners.length; i++) {
      const o = owners[i]!;
      const best = owners[at]!;
      if (o.load < best.load || (o.load === best.load && o.firstDue < best.firstDue)) at = i;
    }
    const owner = owners[at]!;
    let pick: Lane | undefined;
    let pickGiven = Infinity;
    for (const lane of owner.lanes) {
      if (!open(lane)) continue;
      const n = given.get(lane) ?? 0;
      if (n < pickGiven || (n === pickGiven && pick !== undefined && lane.dueAt < pick.dueAt)) {
        pick = lane;
        pickGiven = n;
      }
    }
    if (pick === undefined) {
      owners.splice(at, 1); // nothing of this owner can take a slot now
      continue;
    }
    given.set(pick, pickGiven + 1);
    hostFree.set(pick.host, hostFree.get(pick.host)! - 1);
    endpointFree.set(pick.endpoint, endpointFree.get(pick.endpoint)! - 1);
    owner.load += 1;
    owner.room -= 1;
    left -= 1;
    if (owner.room <= 0) owners.splice(at, 1);
  }
  return given;
}

/** The host of an endpoint key as deliveries store it (`host[:port]`), remembered: a claim asks for the same few. */
export function laneHost(endpoint: string, parse: (endpoint: string) => string): string {
  let host = hosts.get(endpoint);
  if (host === undefined) {
    if (hosts.size >= 10_000) hosts.clear();
    host = parse(endpoint).toLowerCase();
    hosts.set(endpoint, host);
  }
  return host;
}

const hosts = new Map<string, string>();
