/** How often to poll and how long to wait, per environment (the seed's recommended monitoring). */
export interface Preset {
  intervalMs: number;
  timeoutMs: number;
}

export const PRESETS = {
  production: { intervalMs: 30_000, timeoutMs: 10_000 },
  staging: { intervalMs: 60_000, timeoutMs: 15_000 },
  development: { intervalMs: 300_000, timeoutMs: 30_000 },
} as const satisfies Record<string, Preset>;

export type PresetName = keyof typeof PRESETS;

/** Warning and critical thresholds; the same for every preset, and in docs/alerts.yml. */
export const THRESHOLDS = {
  responseMs: { warning: 2000, critical: 5000 },
  /** 5xx share of the requests since the previous poll. */
  errorRate: { warning: 0.01, critical: 0.05 },
  openBreakers: { warning: 1, critical: 3 },
} as const;
