/** One component check as the health response shows it (docs/api.md). */
export interface CheckResult {
  status: 'pass' | 'fail';
  latencyMs: number;
  message?: string;
  /** The chain check on RPC: each endpoint as of this probe (host names hashed for anonymous callers in production). */
  endpoints?: Array<{ host: string; status: 'pass' | 'fail'; breaker: string; message?: string }>;
}

/** A probe that touches its component; resolves when the component answers, rejects otherwise. */
export type Probe = (signal: AbortSignal) => Promise<string | void>;

/** Runs a probe bounded by `timeoutMs`: a hanging component fails the check instead of the endpoint. */
export async function runCheck(probe: Probe, timeoutMs: number, now: () => number = () => performance.now()): Promise<CheckResult> {
  const started = now();
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    const message = await Promise.race([probe(controller.signal), timeout]);
    return { status: 'pass', latencyMs: elapsed(started, now), ...(message ? { message } : {}) };
  } catch (error) {
    return { status: 'fail', latencyMs: elapsed(started, now), message: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

function elapsed(started: number, now: () => number): number {
  return Math.round((now() - started) * 100) / 100;
}
