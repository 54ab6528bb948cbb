/** Starts a benchmark server child process and reads the JSON line it prints when ready. */
import { spawn, type ChildProcess } from 'node:child_process';

export async function startChild<T>(
  script: string,
  env: Record<string, string>,
): Promise<{ info: T; child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const info = await new Promise<T>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as T);
    });
    child.on('exit', (code) => reject(new Error(`${script} exited ${code}`)));
  });
  return {
    info,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
