import { sql, type RawBuilder } from 'kysely';
import { ownerStreamKey } from '../webhooks/outbox.js';
import type { DashboardUser } from './session.js';

/**
 * `launch_id` filter for an owner key (admin sees every owner): a subquery over the owner index, and
 * the key of the owner's own events (the funding events, which belong to no launch).
 */
export function ownLaunchIds(user: DashboardUser): RawBuilder<string> | undefined {
  return user.isAdmin ? undefined : sql<string>`(select id from launches where owner = ${user.owner} union all select cast(${ownerStreamKey(user.owner)} as text))`;
}

/** Whether the user may see a launch of `owner`. */
export const canSee = (user: DashboardUser, owner: string) => user.isAdmin || user.owner === owner;
