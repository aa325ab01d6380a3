import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const root = join(import.meta.dirname, '..', '..', '..');

/**
 * `npm run chain` as a real process (its own data directory, any free port); resolves once serving.
 * The process ends with the test process (test/support/exitWithParent.ts).
 */
export async function startChainProcess(env: Record<string, string>): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', join(root, 'test', 'support', 'exitWithParent.ts'), join(root, 'scripts', 'chain.ts')], {
    cwd: root,
    env: { ...process.env, CHAIN_RPC_PORT: '0', LOG_LEVEL: 'warn', LOG_FORMAT: 'json', NODE_ENV: 'development', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /^chain rpc (\S+)$/.exec(line);
      if (match) resolve(match[1] as string);
    });
    void exited.then(() => reject(new Error(`npm run chain exited before serving: ${stderr}`)));
  });
  return {
    url,
    child,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
