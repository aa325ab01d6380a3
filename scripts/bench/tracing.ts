import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { currentTraceparent, openSpan, startTracing, stopTracing, tracingOn, within } from '../../src/lib/tracing.js';
import { measureDispatcher } from './dispatch.js';
import { result, type BenchResult } from './types.js';

/** OpenTelemetry SDK modules (not the API) this process has loaded. */
function sdkModulesLoaded(): number {
  const cache = createRequire(import.meta.url).cache;
  return Object.keys(cache).filter((path) => /@opentelemetry[\\/](sdk-|exporter-|otlp-|resources|context-async-hooks|core)/.test(path)).length;
}

/**
 * What one delivery's life calls of src/lib/tracing.ts while tracing is off, per delivery: the event's
 * insert asks for the current traceparent, the attempt checks whether tracing is on, and a step's
 * span and its `within` (a launch of ~6 events has ~4 step and transaction spans: counted once per
 * delivery, an overcount). Nanoseconds per delivery, over `n` iterations.
 */
function offHooksNs(n: number): number {
  let sink = 0;
  const work = () => 1;
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    if (currentTraceparent() !== null) sink += 1;
    if (tracingOn()) sink += 1;
    const span = openSpan('launch.step', { attributes: { i } });
    sink += within(span, work);
    span?.end();
  }
  const ns = ((performance.now() - started) * 1e6) / n;
  if (sink !== n) throw new Error('tracing bench: a hook did something while tracing was off');
  return ns;
}

/**
 * `tracing`: tracing off (no OTLP endpoint) costs nothing measurable and loads nothing.
 * - `tracing-off-hooks`: the off-state hooks' time per delivery (ns) against the time one delivery
 *   takes the dispatcher in the same run (1e9 / deliveries per second of `dispatch`'s measurement).
 * - `tracing-off-sdk-modules`: SDK modules loaded after that dispatcher run with tracing off, against
 *   those loaded once tracing starts (so the count is known to see them).
 * - `tracing-on-dispatch`: the dispatcher with tracing on (every attempt a span, exported over
 *   OTLP/HTTP protobuf to a local receiver) against off, for what turning it on costs (reported).
 */
export async function benchTracing(count = 5000, maxMs = 8000): Promise<{ results: BenchResult[]; note: string }> {
  await measureDispatcher(count, maxMs); // warm-up (see DISPATCH_WARM_UP_ROUNDS)
  offHooksNs(1_000_000);
  const off = await measureDispatcher(count, maxMs);
  const hooks = offHooksNs(5_000_000);
  const offModules = sdkModulesLoaded();

  let exported = 0;
  const sink = createServer((req, res) => {
    req.on('data', (c: Buffer) => (exported += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  let on: Awaited<ReturnType<typeof measureDispatcher>>;
  let onModules: number;
  try {
    await startTracing({ protocol: 'http/protobuf', url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/traces`, serviceName: 'bench' });
    onModules = sdkModulesLoaded();
    on = await measureDispatcher(count, maxMs);
    await stopTracing();
  } finally {
    sink.close();
  }
  const deliveryNs = 1e9 / off.perSecond;
  return {
    results: [
      result('tracing-off-hooks', hooks, 'ns/delivery', deliveryNs),
      result('tracing-off-sdk-modules', offModules, 'modules', onModules),
      result('tracing-on-dispatch', on.perSecond, 'deliveries/s', off.perSecond),
    ],
    note: `tracing off: hooks ${hooks.toFixed(1)} ns against ${Math.round(deliveryNs)} ns per delivery (dispatcher ${Math.round(off.perSecond)}/s, ${count} events to one host); on: ${Math.round(on.perSecond)}/s, ${Math.round(exported / 1024)} KiB of OTLP protobuf exported`,
  };
}
