// Child processes for benches: servers run apart from the load generator, under tsx.
import { fork, type ChildProcess } from 'node:child_process';

/** Forks `script` under tsx; resolves once it sends an IPC message (`announces`) or at once. */
export function startChild(script: string, argv: string[], env: NodeJS.ProcessEnv = {}, announces = true): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const cp = fork(script, argv, { execArgv: ['--import', 'tsx'], env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    if (announces) cp.once('message', () => resolve(cp));
    else resolve(cp);
    cp.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

/** Polls `url` until it answers 2xx (30 s at most). */
export async function waitForHttp(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}
