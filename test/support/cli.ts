// Runs the real `./bin/dbq` against a test's data dir and returns what it printed and how it
// exited — never throws, so a test can assert on a failing command's message.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CliOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runDbq(
  dataDir: string,
  args: string[],
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliOutcome> {
  try {
    const { stdout, stderr } = await run('./bin/dbq', args, {
      env: { ...process.env, DBQ_DATA_DIR: dataDir, ...opts.env },
      timeout: opts.timeoutMs ?? 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
