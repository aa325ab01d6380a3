import type { SendAllowance } from '../sql/claimArgs.js';

export type { SendAllowance } from '../sql/claimArgs.js';

/**
 * The send allowances (docs/architecture.md, "Webhook delivery"): how many attempts this dispatcher
 * may have in flight to each host and endpoint it holds deliveries for.
 *
 * A claim leases up to the in-flight cap plus a prefetch per host while no other owner holds a live
 * lease there (within the cap otherwise: two owners each holding leases the other's allowance
 * counts would leave both unable to send), so leases no longer bound what is in flight; the
 * allowance does. Each claim that reaches a host counts, under that host's lock,
 * the live leases of every other owner there, and reports cap − those; the local queue sends to the
 * host only while its attempts out there are fewer than the last reported allowance. Why that bounds
 * every instance's attempts together by the cap, with no write per attempt: take the attempts in
 * flight at some moment and, among the claims that last reported an allowance to an instance before
 * one of those attempts began, the latest, by instance Z at time T. Z's attempts since T are within
 * cap − (others' leases at T). Every other instance's attempt in flight began under an earlier
 * report, so its delivery was leased before T and is still leased, so it was one of the others'
 * leases counted at T. Together: at most the cap. A lease taken without a report (an SQLite
 * handover, sql/leaseOffered.ts) only happens with one writer process, whose allowance is the cap.
 * Bounds hold while each attempt ends within its lease (a queued delivery is sent only with half its
 * lease left; the HTTP timeout is far shorter).
 */
export interface SendAllowances {
  /** Takes what a claim reported (the latest report of a host or endpoint wins). */
  note(allowance: SendAllowance): void;
  /** The host's allowance, at most `cap` (the cap when nothing was reported). */
  host(host: string, cap: number): number;
  /** The endpoint's allowance, at most `cap`. */
  endpoint(endpoint: string, cap: number): number;
  /** Forgets a host or endpoint this dispatcher no longer holds deliveries for (the next claim reaching it reports anew). */
  forgetHost(host: string): void;
  forgetEndpoint(endpoint: string): void;
}

export function createSendAllowances(): SendAllowances {
  const hosts = new Map<string, number>();
  const endpoints = new Map<string, number>();
  return {
    note(a) {
      hosts.set(a.host, a.hostAllowance);
      endpoints.set(a.endpoint, a.endpointAllowance);
    },
    host: (host, cap) => Math.min(cap, hosts.get(host) ?? cap),
    endpoint: (endpoint, cap) => Math.min(cap, endpoints.get(endpoint) ?? cap),
    forgetHost: (host) => void hosts.delete(host),
    forgetEndpoint: (endpoint) => void endpoints.delete(endpoint),
  };
}
