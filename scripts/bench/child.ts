import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** A running bench child process and the first JSON line it printed. */
export interface BenchChild<T> {
  child: ChildProcess;
  first: T;
  /** Every later JSON line, in order. */
  lines: unknown[];
  /** Resolves with the next JSON line the child prints. */
  nextLine(): Promise<unknown>;
  exited: Promise<number | null>;
  /** What the child wrote to stderr so far (its last 2 000 characters). */
  stderr(): string;
  stop(): Promise<void>;
}

/** Spawns `node --import tsx <script>` from scripts/bench and waits for its first JSON line. */
export async function spawnBenchChild<T>(script: string, args: string[] = [], env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<BenchChild<T>> {
  const file = fileURLToPath(new URL(`./${script}`, import.meta.url));
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', file, ...args], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const lines: unknown[] = [];
  const lineWaiters: Array<(line: unknown) => void> = [];
  const first = await new Promise<T>((resolve, reject) => {
    let got = false;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        return;
      }
      if (got) {
        lines.push(parsed);
        lineWaiters.shift()?.(parsed);
      } else {
        got = true;
        resolve(parsed as T);
      }
    });
    void exited.then((code) => {
      if (!got) reject(new Error(`${script} exited (${code}) before it was ready: ${stderr.slice(-2000)}`));
    });
  });
  return {
    child,
    first,
    lines,
    nextLine: () => new Promise((resolve) => lineWaiters.push(resolve)),
    exited,
    stderr: () => stderr.slice(-2000),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
