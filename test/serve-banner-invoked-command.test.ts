// `dbq serve`'s start banner names the command as it was typed: `dbq …` when dbq was found on
// the PATH (a global install or `npm link`: a `dbq` link to bin/dbq), `./bin/dbq …` when run
// from a checkout. A globally installed dbq used to print `./bin/dbq`, a path that does not
// exist where its user stands. Real `serve` processes on a free port, their stdout read.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const temps: string[] = [];

afterAll(() => {
  for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
});

function temp(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(dir);
  return dir;
}

/** Starts `command serve` and returns its banner (stdout up to the blank line that ends it). */
async function banner(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(command, ['serve', '--port', '0', '--host', '127.0.0.1'], {
    cwd,
    env: { ...process.env, DBQ_DATA_DIR: temp('dbq-banner-data-'), DBQ_PUBLIC_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no banner in 60 s; stderr: ${err}`)), 60_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        // The banner's last paragraph ends with the curl line.
        if (/curl -s .*\n/.test(out)) {
          clearTimeout(timer);
          resolve(out);
        }
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`serve exited ${code} before its banner; stderr: ${err}`));
      });
    });
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(null)));
  }
}

describe('the serve banner names dbq as it was invoked', () => {
  it('on the PATH as dbq (a global install): `dbq …`, never ./bin/dbq', async () => {
    const bin = temp('dbq-banner-bin-');
    fs.symlinkSync(path.join(ROOT, 'bin', 'dbq'), path.join(bin, 'dbq'));
    const elsewhere = temp('dbq-banner-cwd-');
    const text = await banner('dbq', elsewhere, { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` });
    expect(text).toContain('dbq is serving http://localhost:');
    expect(text).toMatch(/^ {8}dbq workspace set-plan default /m);
    expect(text).toMatch(/^ {2}dbq user create --workspace default /m);
    expect(text).not.toContain('bin/dbq');
  }, 90_000);

  it('from a checkout: `./bin/dbq …`', async () => {
    const text = await banner('./bin/dbq', ROOT, {});
    expect(text).toMatch(/^ {2}\.\/bin\/dbq user create --workspace default /m);
    expect(text).toMatch(/^ {2}\.\/bin\/dbq key create --workspace default /m);
  }, 90_000);
});
