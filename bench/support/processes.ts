// Child processes for benches: servers run apart from the load generator. TypeScript files run
// under tsx; dbq itself runs as bin/dbq, the way users run it (its compiled build when current).
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
// @ts-expect-error plain JS module shared with bin/dbq, no type declarations
import { buildIsCurrent } from '../../bin/build-state.mjs';
import fs from 'node:fs';
import path from 'node:path';

/** Forks `script` (under tsx when it is TypeScript); resolves once it sends an IPC message (`announces`) or at once. */
export function startChild(script: string, argv: string[], env: NodeJS.ProcessEnv = {}, announces = true): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const cp = fork(script, argv, {
      execArgv: script.endsWith('.ts') ? ['--import', 'tsx'] : [],
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
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

/** Builds dist/server when src/ changed since: bin/dbq would otherwise run the sources through
 * tsx, and the bench would measure that. */
export function ensureBuilt(): void {
  if (buildIsCurrent()) return;
  const built = spawnSync(process.execPath, [path.resolve('scripts/build-server.mjs')], { stdio: 'inherit' });
  if (built.status !== 0 || !buildIsCurrent()) throw new Error('npm run build failed');
}

/** `dbq serve` on `port` as users start it; resolves at once (poll /healthz). */
export function startDbqServe(port: number, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  ensureBuilt();
  process.stderr.write('dbq: compiled build (dist/server)\n');
  return startChild(path.resolve('bin/dbq'), ['serve', '--port', String(port)], env, false);
}

/** CPU time (user + system) a process has used so far, in seconds, from /proc/<pid>/stat;
 * NaN where /proc is missing. Divided by the requests a server answered meanwhile, it is that
 * server's CPU per request: steadier than req/s on a small machine where the load generator,
 * PostgreSQL and the server share the cores. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
// USER_HZ: 100 on every Linux architecture Node supports.
const CLOCK_TICKS = 100;
