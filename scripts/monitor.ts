/**
 * The seed's recommended monitoring (README.md, Operations):
 * `npm run monitor -- --url http://localhost:8080 --preset production|staging|development [--once] [--json]`
 * Polls /api/health (and /metrics for the 5xx rate) at the preset's interval and prints one line per
 * poll. With --once it polls once and exits 0 ok, 1 warning, 2 critical (3: bad arguments).
 * Optional: --timeout <duration> and --interval <duration> override the preset; --metrics-token
 * (or METRICS_TOKEN) is sent to /metrics.
 */
import { parseArgs } from 'node:util';
import { parseDuration } from '../src/config/duration.js';
import { EXIT_CODES, evaluate, type Verdict } from '../src/monitor/evaluate.js';
import { errorRateBetween, pollHealth, readRequestCounts, type PollTarget, type RequestCounts } from '../src/monitor/poll.js';
import { PRESETS, type PresetName } from '../src/monitor/presets.js';

const USAGE = 'usage: npm run monitor -- --url <http://host:port> --preset production|staging|development [--once] [--json] [--timeout 10s] [--interval 30s] [--metrics-token <token>]';

function format(v: Verdict, json: boolean): string {
  if (json) return JSON.stringify({ level: v.level, status: v.status, responseMs: v.responseMs, errorRate: v.errorRate, openBreakers: v.openBreakers, reasons: v.reasons });
  const rate = v.errorRate === null ? 'n/a' : `${(v.errorRate * 100).toFixed(2)}%`;
  const why = v.reasons.length > 0 ? ` — ${v.reasons.join('; ')}` : '';
  return `${new Date().toISOString()} ${v.level.toUpperCase()} status=${v.status} responseMs=${v.responseMs} errorRate=${rate} openBreakers=${v.openBreakers}${why}`;
}

function duration(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) throw new Error(`--${flag} must be a duration like 500ms, 10s or 2m, got "${text}"`);
  return ms;
}

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        url: { type: 'string', default: 'http://localhost:8080' },
        preset: { type: 'string', default: 'production' },
        once: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        timeout: { type: 'string' },
        interval: { type: 'string' },
        'metrics-token': { type: 'string' },
      },
    }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 3;
  }
  const preset = PRESETS[values.preset as PresetName];
  if (!Object.hasOwn(PRESETS, values.preset)) {
    process.stderr.write(`unknown preset "${values.preset}"\n${USAGE}\n`);
    return 3;
  }
  let target: PollTarget;
  let intervalMs: number;
  try {
    new URL(values.url);
    target = {
      url: values.url,
      timeoutMs: duration('timeout', values.timeout, preset.timeoutMs),
      metricsToken: values['metrics-token'] ?? process.env.METRICS_TOKEN,
    };
    intervalMs = duration('interval', values.interval, preset.intervalMs);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 3;
  }

  let previous: RequestCounts | undefined;
  const pollOnce = async (): Promise<Verdict> => {
    const health = await pollHealth(target);
    const counts = await readRequestCounts(target);
    const errorRate = counts ? errorRateBetween(previous, counts) : null;
    if (counts) previous = counts;
    return evaluate({ ...health, errorRate });
  };

  if (values.once) {
    const verdict = await pollOnce();
    process.stdout.write(`${format(verdict, values.json)}\n`);
    return EXIT_CODES[verdict.level];
  }
  let stopped = false;
  process.on('SIGINT', () => (stopped = true));
  process.on('SIGTERM', () => (stopped = true));
  while (!stopped) {
    const started = Date.now();
    process.stdout.write(`${format(await pollOnce(), values.json)}\n`);
    const wait = Math.max(0, intervalMs - (Date.now() - started));
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
      const stop = () => (clearTimeout(timer), resolve());
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`monitor failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(3);
  },
);
