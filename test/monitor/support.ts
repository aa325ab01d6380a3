import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface MonitorRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The parsed JSON line, when --json was given. */
  line: { level: string; status: string; responseMs: number; errorRate: number | null; openBreakers: number; reasons: string[] };
}

/** Runs `scripts/monitor.ts` (what `npm run monitor` runs) as a real process. */
export function runMonitor(args: string[]): Promise<MonitorRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/monitor.ts', ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      let line = {} as MonitorRun['line'];
      try {
        line = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as MonitorRun['line'];
      } catch {
        // not --json
      }
      resolve({ code, stdout, stderr, line });
    }),
  );
}
