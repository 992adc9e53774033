// When dbq died (SIGKILL, a crash) while a SQLite runner child was inside a statement, the
// child used to finish it, replied on the dead IPC channel and died of the unhandled
// EPIPE, printing `Error: write EPIPE … at target._send` with a stack on the terminal the two
// shared. The child now exits quietly: nothing on stdout or stderr, and gone soon after its
// statement ends (an idle child at once).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/harness.ts';

const PARENT = fileURLToPath(new URL('./sqlite-runner-parent.ts', import.meta.url));
const dir = tempDir('dbq-runner-orphan-');

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts the parent, SIGKILLs it once it printed its children, and reports what the children
 * wrote (they share the parent's stdout and stderr, which this test reads) and how long each
 * outlived the parent. */
async function killParent(mode: 'idle' | 'busy'): Promise<{ output: string; childAfterKill: boolean[]; goneAfterMs: number }> {
  const file = path.join(dir, `${mode}.db`);
  fs.writeFileSync(file, '');
  const parent = spawn(process.execPath, ['--import', 'tsx', PARENT, file, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  parent.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const children = await new Promise<number[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`parent did not start: ${stderr}`)), 30_000);
    parent.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (line && stdout.includes('\n')) {
        clearTimeout(timer);
        resolve(JSON.parse(line).children as number[]);
      }
    });
  });
  stdout = '';
  expect(children.length).toBeGreaterThan(0);
  // The pipes stay open until the last child closes them: once both are closed, whatever the
  // children wrote is in.
  const pipesClosed = Promise.all([once(parent.stdout, 'close'), once(parent.stderr, 'close')]);
  const killedAt = Date.now();
  parent.kill('SIGKILL');
  await new Promise((resolve) => parent.once('exit', resolve));
  const childAfterKill = children.map(alive);
  while (children.some(alive) && Date.now() - killedAt < 60_000) await new Promise((r) => setTimeout(r, 50));
  const goneAfterMs = Date.now() - killedAt;
  // A child still alive (the test then fails) keeps them open: not waited for past a moment.
  await Promise.race([pipesClosed, new Promise((r) => setTimeout(r, 2_000))]);
  for (const pid of children) if (alive(pid)) process.kill(pid, 'SIGKILL');
  return { output: stdout + stderr, childAfterKill, goneAfterMs };
}

describe('a SQLite runner child whose parent is killed', () => {
  it('inside a statement: finishes it, then exits without a word', async () => {
    const { output, childAfterKill, goneAfterMs } = await killParent('busy');
    console.info(`busy runner child outlived its parent by ${goneAfterMs} ms (its statement's remainder)`);
    // It was still inside the statement when the parent died, so it did reply into a dead channel.
    expect(childAfterKill).toContain(true);
    expect(goneAfterMs).toBeLessThan(60_000);
    expect(output).toBe('');
  }, 90_000);

  it('idle: exits at once, without a word', async () => {
    const { output, goneAfterMs } = await killParent('idle');
    expect(goneAfterMs).toBeLessThan(2_000);
    expect(output).toBe('');
  }, 60_000);
});
