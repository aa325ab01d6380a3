import { sql, type RawBuilder } from 'kysely';
import type { DashboardUser } from './session.js';

/** `launch_id` filter for an owner key (admin sees every owner): a subquery over the owner index. */
export function ownLaunchIds(user: DashboardUser): RawBuilder<string> | undefined {
  return user.isAdmin ? undefined : sql<string>`(select id from launches where owner = ${user.owner})`;
}

/** Whether the user may see a launch of `owner`. */
export const canSee = (user: DashboardUser, owner: string) => user.isAdmin || user.owner === owner;
