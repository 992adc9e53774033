// The SQLite "connection pool": child processes running sqlite-runner.mjs, each doing one
// request at a time. A child is the unit of cancellation: SIGKILL ends a statement that is
// stuck inside sqlite3_step, where nothing in-process can reach it.

import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const RUNNER = fileURLToPath(new URL('./sqlite-runner.mjs', import.meta.url));
const IDLE_EXIT_MS = 60_000;

export interface RunnerFailure {
  kind: 'permission' | 'open' | 'sqlite' | 'driver' | 'exited';
  code: string | null;
  message: string;
}

/** A request the runner answered with an error, or a child that died under it. */
export class RunnerError extends Error {
  readonly failure: RunnerFailure;
  constructor(failure: RunnerFailure) {
    super(failure.message);
    this.name = 'SqliteRunnerError';
    this.failure = failure;
  }
}

interface Reply {
  id: number;
  ok: boolean;
  result?: unknown;
  error?: RunnerFailure;
}

export class SqliteChild {
  private readonly proc: ChildProcess;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly ready: Promise<void>;
  private nextId = 1;
  private exited = false;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(file: string) {
    // execArgv: [] so the child does not inherit the parent's loaders (tsx, vitest).
    this.proc = fork(RUNNER, [file], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.ready = new Promise<void>((resolve, reject) => {
      const onMessage = (msg: unknown) => {
        if ((msg as { ready?: boolean }).ready) {
          this.proc.off('message', onMessage);
          resolve();
        }
      };
      this.proc.on('message', onMessage);
      this.proc.once('exit', () => reject(new RunnerError({ kind: 'exited', code: null, message: 'sqlite runner exited' })));
    });
    this.ready.catch(() => {});
    this.proc.on('message', (msg: Reply) => {
      const call = this.pending.get(msg.id);
      if (!call) return;
      this.pending.delete(msg.id);
      if (msg.ok) call.resolve(msg.result);
      else call.reject(new RunnerError(msg.error ?? { kind: 'driver', code: null, message: 'unknown runner error' }));
    });
    this.proc.on('error', () => {});
    this.proc.once('exit', () => {
      this.exited = true;
      const failure = new RunnerError({ kind: 'exited', code: null, message: 'sqlite runner exited' });
      for (const call of this.pending.values()) call.reject(failure);
      this.pending.clear();
    });
  }

  get alive(): boolean {
    return !this.exited;
  }

  /** Resolves once the runner has started; a child that does not start in `timeoutMs` is
   * killed. Startup is the "connect" of this engine and does not count against a statement's
   * timeout. */
  async whenReady(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.ready,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new RunnerError({ kind: 'exited', code: null, message: `sqlite runner did not start within ${timeoutMs} ms` })),
            timeoutMs,
          );
        }),
      ]);
    } catch (err) {
      this.kill();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  async call<T>(op: string, args: Record<string, unknown> = {}): Promise<T> {
    await this.ready;
    if (this.exited) throw new RunnerError({ kind: 'exited', code: null, message: 'sqlite runner exited' });
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.proc.send({ id, op, ...args });
    });
  }

  kill(): void {
    if (!this.exited) this.proc.kill('SIGKILL');
  }

  /** SIGKILL and wait (at most `ms`) until the process is gone. */
  async killAndWait(ms: number): Promise<void> {
    this.kill();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exitedPromise(), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /** Idle children do not keep the parent process alive, and exit after a while. */
  park(onExpire: () => void): void {
    this.proc.unref();
    (this.proc.channel as { unref?: () => void } | undefined)?.unref?.();
    this.idleTimer = setTimeout(() => {
      onExpire();
      this.kill();
    }, IDLE_EXIT_MS);
    this.idleTimer.unref();
  }

  unpark(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.proc.ref();
    (this.proc.channel as { ref?: () => void } | undefined)?.ref?.();
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** Resolves once the process is gone. */
  exitedPromise(): Promise<void> {
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => this.proc.once('exit', () => resolve()));
  }
}
