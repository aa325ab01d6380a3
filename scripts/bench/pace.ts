import { performance } from 'node:perf_hooks';

/**
 * Calls `fire(i)` at a steady `perSecond` for `durationMs` (catching up in small bursts when a timer
 * fires late), without awaiting each call, then waits for every call to settle.
 */
export async function paced(perSecond: number, durationMs: number, fire: (i: number) => Promise<void>): Promise<number> {
  const total = Math.round((perSecond * durationMs) / 1000);
  const pending: Promise<void>[] = [];
  const started = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * perSecond) / 1000) + 1);
    while (sent < due) pending.push(fire(sent++));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(pending);
  return total;
}
