import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const fixture = fileURLToPath(new URL('./serviceProcess.ts', import.meta.url));
const exitWithParent = fileURLToPath(new URL('../../support/exitWithParent.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** The service running in a child process (serviceProcess.ts). */
export interface ChildService {
  child: ChildProcess;
  origin: string;
  exited: Promise<NodeJS.Signals | number | null>;
  kill(signal: NodeJS.Signals): Promise<NodeJS.Signals | number | null>;
}

/**
 * Spawns `node --import tsx serviceProcess.ts` with `env` and waits until it listens; the process ends
 * with the test process (test/support/exitWithParent.ts).
 */
export async function startChildService(env: Record<string, string>): Promise<ChildService> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', exitWithParent, fixture], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
    void exited.then((how) => reject(new Error(`service process exited (${how}) before listening: ${stderr.slice(-2000)}`)));
  });
  return {
    child,
    origin: `http://127.0.0.1:${port}`,
    exited,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
