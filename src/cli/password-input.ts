// Passwords never go on the command line (shell history, `ps`): `--password-stdin` reads one
// line from standard input, otherwise a terminal prompts twice without echo.
import { InvalidRequestError } from '../errors.ts';

export async function readPasswordFromStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  // The trailing newline of `echo pw |` is not part of the password.
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** Reads one line from the terminal with echo off. */
function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  return new Promise((resolve, reject) => {
    let value = '';
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const done = (err: Error | null) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return done(null);
        if (ch === '\u0003') return done(new InvalidRequestError('cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

export async function readNewPassword(opts: { passwordStdin?: boolean }): Promise<string> {
  if (opts.passwordStdin) return readPasswordFromStdin();
  if (!process.stdin.isTTY) {
    throw new InvalidRequestError('no terminal to prompt on: pipe the password with --password-stdin');
  }
  const first = await promptHidden('New password: ');
  const second = await promptHidden('Repeat it: ');
  if (first !== second) throw new InvalidRequestError('the two passwords differ');
  return first;
}
