/** Bounds on open event streams (EVENT_STREAMS_PER_KEY, EVENT_STREAMS_PER_OWNER, EVENT_STREAMS_MAX; docs/api.md). */
export interface StreamLimits {
  perKey: number;
  perOwner: number;
  max: number;
  /** Per caller address (HTTP_MAX_CONNECTIONS_PER_CLIENT; behind TRUST_PROXY the forwarded caller); 0 or absent: none. */
  perAddress?: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = { perKey: 10, perOwner: 20, max: 500 };

/** Why a stream was refused: which bound is full, and what it is. */
export interface StreamRefusal {
  bound: 'key' | 'owner' | 'service' | 'address';
  limit: number;
}

/**
 * Counts the open event streams of this process per API key, per owner and in all. `open` takes a
 * slot in each or none (a refusal names the bound that is full); the release it returns gives them
 * back once, however often it is called.
 */
export interface StreamSlots {
  open(keyId: string, owner: string, address?: string): { release(): void } | StreamRefusal;
  readonly size: number;
}

export function createStreamSlots(limits: StreamLimits): StreamSlots {
  const byKey = new Map<string, number>();
  const byOwner = new Map<string, number>();
  const byAddress = new Map<string, number>();
  const perAddress = limits.perAddress ?? 0;
  let total = 0;
  const add = (map: Map<string, number>, id: string, n: number) => {
    const next = (map.get(id) ?? 0) + n;
    // Deleted at zero: a key or owner with no stream open holds no entry.
    if (next === 0) map.delete(id);
    else map.set(id, next);
  };
  return {
    open(keyId, owner, address = 'unknown') {
      if ((byKey.get(keyId) ?? 0) >= limits.perKey) return { bound: 'key', limit: limits.perKey };
      if ((byOwner.get(owner) ?? 0) >= limits.perOwner) return { bound: 'owner', limit: limits.perOwner };
      if (total >= limits.max) return { bound: 'service', limit: limits.max };
      if (perAddress > 0 && (byAddress.get(address) ?? 0) >= perAddress) return { bound: 'address', limit: perAddress };
      add(byKey, keyId, 1);
      add(byAddress, address, 1);
      add(byOwner, owner, 1);
      total += 1;
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          add(byKey, keyId, -1);
          add(byOwner, owner, -1);
          add(byAddress, address, -1);
          total -= 1;
        },
      };
    },
    get size() {
      return total;
    },
  };
}
