// bench/faults: what clients see when something dbq depends on fails under load, and how fast
// it comes back. One scenario at a time, each run in rounds against real dbq
// processes (bin/dbq) with a closed loop of reads and writes over HTTP; per round:
//   answers       — by status and code, over the whole round (before, during, after the fault);
//                   `no answer (ECONNREFUSED)` is a connection refused, `NOT IN THE ENVELOPE` an
//                   error answer without dbq's `code` (must not appear)
//   worst failure — the slowest answer that was not a 200, among requests sent after the fault
//                   began (one in flight at that moment waits on its own statement first)
//   worst during  — the slowest answer of any status among requests sent while the fault lasted
//                   (a hung dependency can slow 200s down without failing them)
//   recovery      — from the dependency being back to the first 200 sent after that (a
//                   scenario may measure it otherwise: its heading says how)
//   writes lost   — writes answered 200 that are missing from the target table or from the
//                   history as `succeeded`: must be 0
//   not acknowledged / in target — writes answered otherwise than 200 (a refused connection
//                   aside: it never reached dbq), and how many of them the target holds anyway;
//                   the notes say whether their answers told the client (`statementRan`)
//   alive         — the dbq process(es) serving at the end of the round are running
//   notes         — what else the scenario looks at
// Scenarios: SCENARIOS below, each with its own rig (fault-rig.ts, shared with a test, or
// support/fault-rigs.ts), fault, rounds and outage; the measuring and the table are shared.
// Each is short (an outage of 1-3 s, 2-3 rounds) so that all of them run in a few minutes on a
// busy 2-core machine; the machine's own servers are never stopped (private ones, or a proxy).
// dbq runs as bin/dbq does: its build when current, else the sources through tsx (the figures
// are about failing and recovering, not throughput, so no build is forced).
// Usage: node --import tsx bench/faults.ts [--scenario kill-9] [--rounds 3] [--outage-ms 3000]
import os from 'node:os';
// @ts-expect-error plain JS module shared with bin/dbq, no type declarations
import { buildIsCurrent } from '../bin/build-state.mjs';
import {
  eventually,
  lostAcknowledgedWrites,
  startStoreRig,
  type Answer,
  type LoadHandle,
  type StoreRig,
} from '../test/support/fault-rig.ts';
import { http, privateRedis, type PrivateRedis } from '../test/support/processes.ts';
import { startTcpProxy, type TcpProxy } from '../test/support/tcp-proxy.ts';
import { option } from './support/args.ts';
import { startDbqRig, type DbqRig } from './support/fault-rigs.ts';

const ROUNDS = option('rounds', '');
const OUTAGE_MS = option('outage-ms', '');
const ONLY = option('scenario', '');
/** A read's `timeoutMs` against a target that may vanish: the answer should come by then, not
 * after the driver's or the kernel's own timeouts (25 s). */
const TARGET_TIMEOUT_MS = 2_000;
/** dbq's grace period in the SIGTERM scenario: short, so the long statements outlive it. */
const GRACE_MS = 2_000;

interface Rig {
  /** The dbq process(es) serving now are running. */
  alive(): boolean;
  load(): LoadHandle;
  /** Answers 200 once dbq serves normally. */
  healthy(): Promise<boolean>;
  lost(answers: Answer[]): Promise<{ acknowledged: number; lost: number }>;
  /** Which of these written values the target table holds. */
  inTarget(values: number[]): Promise<Set<number>>;
  close(): Promise<void>;
}

interface Scenario {
  name: string;
  /** What the fault is, for the table's heading. */
  fault: string;
  rounds: number;
  outageMs: number;
  /** 200s to see before the fault (a paced load gives fewer). */
  warmAnswers?: number;
  setUp(): Promise<Rig>;
  /** Breaks the dependency; resolves once it is broken. */
  inject(): Promise<void>;
  /** Brings it back; resolves once it is back (the recovery clock starts then, or as it
   * begins with `clockFromRestoreStart`: a restart's own start-up is part of recovering). */
  restore(): Promise<void>;
  clockFromRestoreStart?: boolean;
  /** Recovery measured otherwise than by the first 200: ms after `restoredEpochMs`, or null. */
  recovery?(restoredEpochMs: number): Promise<number | null>;
  /** What else the round showed, for the notes column. */
  notes?(answers: Answer[]): Promise<string>;
}

/** Where a round is, on stderr: a scenario that stalls shows where. */
const progress = (what: string) => process.stderr.write(`${new Date().toISOString().slice(11, 23)} ${what}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ms = (v: number | null) => (v === null ? '—' : v.toFixed(0));

function label(a: Answer): string {
  if (a.status === 200) return '200';
  if (a.status === 0) return `no answer (${a.error ?? 'unknown'})`;
  return a.code ? `${a.status} ${a.code}` : `${a.status} NOT IN THE ENVELOPE`;
}

function byLabel(answers: Answer[]): string {
  const counts = new Map<string, number>();
  for (const a of answers) counts.set(label(a), (counts.get(label(a)) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k}: ${n}`)
    .join(', ');
}

async function valuesInTarget(rig: { table: string; targetQuery: DbqRig['targetQuery'] }, values: number[]): Promise<Set<number>> {
  const rows = await rig.targetQuery<{ n: string }>(`SELECT n FROM ${rig.table} WHERE n = ANY($1::bigint[])`, [values]);
  return new Set(rows.map((r) => Number(r.n)));
}

/** Writes that were not acknowledged (but not refused at the door: those never reached dbq),
 * and those of them the target holds anyway: a client told nothing, or an error that does not
 * say `statementRan`, would retry and write twice. */
async function unacknowledgedWrites(rig: Rig, answers: Answer[]): Promise<{ column: string; note: string }> {
  const writes = answers.filter((a) => a.kind === 'write' && a.status !== 200 && a.error !== 'ECONNREFUSED');
  const present = await rig.inTarget(writes.map((a) => a.value!));
  const ran = writes.filter((a) => present.has(a.value!));
  const told = ran.filter((a) => a.statementRan === true || a.statementRan === 'unknown').length;
  const silent = ran.filter((a) => a.status === 0).length;
  const untold = ran.filter((a) => a.status !== 0 && a.statementRan !== true && a.statementRan !== 'unknown');
  const parts = [
    told && `${told} said statementRan true or unknown`,
    silent && `${silent} got no answer`,
    untold.length && `${untold.length} answered ${byLabel(untold)} without statementRan`,
  ].filter(Boolean);
  return {
    column: `${writes.length} / ${ran.length}`,
    note: parts.length ? `in the target though not acknowledged: ${parts.join(', ')}` : '',
  };
}

/** The rig of the scenarios built on startDbqRig. */
function asRig(rig: DbqRig, load: () => LoadHandle): Rig {
  return {
    alive: () => rig.dbqs.every((d) => d.child.exitCode === null && d.child.signalCode === null),
    load,
    healthy: () => rig.healthy(),
    lost: (answers) => rig.lost(answers),
    inTarget: (values) => valuesInTarget(rig, values),
    close: () => rig.close(),
  };
}

/** Resolves with the exit code once `child` has exited, and how long that took. */
async function signalAndWait(rig: DbqRig, signal: NodeJS.Signals): Promise<{ code: number | null; ms: number }> {
  const child = rig.dbqs[0].child;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const sent = performance.now();
  child.kill(signal);
  const code = await exited;
  return { code, ms: performance.now() - sent };
}

function storeOutage(): Scenario {
  let rig: StoreRig;
  return {
    name: 'store-outage',
    fault: 'the PostgreSQL store stopped with `pg_ctl stop -m immediate`, started again after the outage',
    rounds: 3,
    outageMs: 3_000,
    async setUp() {
      rig = await startStoreRig({ logLevel: 'warn' });
      return {
        alive: () => rig.dbq.child.exitCode === null && rig.dbq.child.signalCode === null,
        load: () => rig.load({ readers: 2, writers: 2 }),
        healthy: async () =>
          (await http('POST', `${rig.dbq.url}/api/query`, rig.key, { connectionId: 'pg', sql: 'SELECT 1' })).status === 200,
        inTarget: (values) => valuesInTarget(rig, values),
        async lost(answers) {
          const l = await lostAcknowledgedWrites(rig, answers);
          return { acknowledged: l.acknowledged, lost: l.missingInTarget.length + l.missingInHistory.length };
        },
        close: () => rig.close(),
      };
    },
    inject: () => rig.cluster.stop('immediate'),
    restore: () => rig.cluster.start(),
  };
}

const LIMITS_DOWN = 'Redis unreachable: rate limits are counted per process';
const LIMITS_BACK = 'Redis reachable again: rate limits are shared';

function redisHang(): Scenario {
  let redis: PrivateRedis | null = null;
  let rig: DbqRig;
  const logged = (text: string, sinceEpochMs: number) =>
    rig.dbqs.map((d) => d.logs.find((l) => typeof l.msg === 'string' && l.msg.includes(text) && Number(l.time) >= sinceEpochMs));
  let pausedAt = 0;
  return {
    name: 'redis-hang',
    fault:
      'the Redis shared by 2 dbq processes (PostgreSQL store) hung with SIGSTOP, SIGCONT after the outage; a professional-plan workspace (every request counted in Redis), so the load is paced (a request per loop every 0.7 s) to stay under its 300 a minute; recovery: until both processes log that rate limits are shared again',
    rounds: 2,
    outageMs: 3_000,
    warmAnswers: 8,
    async setUp() {
      redis = await privateRedis();
      try {
        // info: "Redis reachable again" is logged at info.
        rig = await startDbqRig({
          store: 'postgres',
          processes: 2,
          redisUrl: redis.url,
          plan: 'professional',
          env: { DBQ_LOG_LEVEL: 'info' },
        });
      } catch (err) {
        await redis.stop();
        throw err;
      }
      const r = asRig(rig, () => rig.load({ readers: 2, writers: 2, pauseMs: 700 }));
      return {
        ...r,
        async close() {
          await r.close();
          redis?.resume();
          await redis?.stop();
        },
      };
    },
    async inject() {
      pausedAt = Date.now();
      redis!.pause();
    },
    async restore() {
      redis!.resume();
    },
    async recovery(restoredEpochMs) {
      const seen = await eventually(
        'rate limits shared again in both processes',
        async () => {
          const lines = logged(LIMITS_BACK, restoredEpochMs);
          return lines.every((l) => l) ? lines : false;
        },
        10_000,
      ).catch(() => null);
      return seen ? Math.max(...seen.map((l) => Number(l!.time))) - restoredEpochMs : null;
    },
    async notes(answers) {
      const slow = answers.filter((a) => a.ms > 300).length;
      const opened = logged(LIMITS_DOWN, pausedAt).filter((l) => l).length;
      return `${slow} answers over 300 ms; breaker opened in ${opened} of ${rig.dbqs.length} processes`;
    },
  };
}

function targetFault(kind: 'blackholed' | 'down'): Scenario {
  let proxy: TcpProxy;
  let rig: DbqRig;
  return {
    name: `target-${kind}`,
    fault:
      kind === 'blackholed'
        ? `the network to a PostgreSQL target went silent (a proxy accepts, passes nothing on, never closes), forwarding again after the outage; reads and writes with timeoutMs ${TARGET_TIMEOUT_MS}, dbq on a SQLite store`
        : `a PostgreSQL target went down (a proxy resets every open connection and refuses new ones), forwarding again after the outage; reads and writes with timeoutMs ${TARGET_TIMEOUT_MS}, dbq on a SQLite store`,
    rounds: 3,
    outageMs: 3_000,
    async setUp() {
      proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
      try {
        rig = await startDbqRig({ store: 'sqlite', targetUrl: `postgres://postgres@127.0.0.1:${proxy.port}/test` });
      } catch (err) {
        await proxy.close();
        throw err;
      }
      const r = asRig(rig, () => rig.load({ readers: 2, writers: 2, timeoutMs: TARGET_TIMEOUT_MS }));
      return {
        ...r,
        async close() {
          // The proxy first: a write blackholed between its Execute and its Sync leaves a backend
          // waiting on its client, holding its lock, for as long as the proxy keeps the upstream
          // socket open — and the rig's DROP TABLE would wait behind it for good.
          await proxy.close();
          await r.close();
        },
      };
    },
    async inject() {
      if (kind === 'blackholed') proxy.blackhole();
      else await proxy.refuse();
    },
    async restore() {
      proxy.restore();
      await eventually('the proxy listening', async () => proxy.listening, 5_000);
    },
  };
}

/** Starts the killed or stopped process again; how long until it listened. */
async function timedRestart(rig: DbqRig): Promise<number> {
  const began = performance.now();
  await rig.restart();
  return performance.now() - began;
}

function kill9(): Scenario {
  let rig: DbqRig;
  let runningBefore = 0;
  let restartMs = 0;
  return {
    name: 'kill-9',
    fault:
      'dbq (SQLite store) killed with SIGKILL under a write-heavy load (1 reader, 3 writers), started again on the same data dir after the outage; recovery: from the restart to the first 200',
    rounds: 2,
    outageMs: 1_000,
    clockFromRestoreStart: true,
    async setUp() {
      rig = await startDbqRig({ store: 'sqlite' });
      return asRig(rig, () => rig.load({ readers: 1, writers: 3 }));
    },
    async inject() {
      runningBefore = await rig.runningEntries();
      await signalAndWait(rig, 'SIGKILL');
    },
    async restore() {
      restartMs = await timedRestart(rig);
    },
    async notes() {
      // A write in flight at the kill keeps its `running` entry: the operator checks it.
      return [
        `history entries left running: ${(await rig.runningEntries()) - runningBefore}`,
        `listening ${restartMs.toFixed(0)} ms after the restart`,
      ].join('; ');
    },
  };
}

function sigterm(): Scenario {
  let rig: DbqRig;
  let restartMs = 0;
  /** The stop: exit code, ms from SIGTERM to exit, when SIGTERM was sent, and the long reads'
   * answers (`afterSignalMs`: answered this long after SIGTERM). */
  let stop: {
    code: number | null;
    ms: number;
    sentAt: number;
    long: Array<{ status: number; code: string | null; afterSignalMs: number }>;
  };
  return {
    name: 'sigterm',
    fault: `SIGTERM to dbq (SQLite store, DBQ_SHUTDOWN_GRACE_MS ${GRACE_MS}) under load (2 readers, 2 writers) with 2 reads of pg_sleep(20) running, started again after the outage; recovery: from the restart to the first 200`,
    rounds: 2,
    outageMs: 1_000,
    clockFromRestoreStart: true,
    async setUp() {
      rig = await startDbqRig({ store: 'sqlite', env: { DBQ_SHUTDOWN_GRACE_MS: String(GRACE_MS) } });
      return asRig(rig, () => rig.load({ readers: 2, writers: 2 }));
    },
    async inject() {
      const marker = `sigterm_long_${Date.now()}`;
      const longSentAt = performance.now();
      const long = [0, 1].map(() => rig.query(`SELECT pg_sleep(20), '${marker}' AS marker`, { timeoutMs: 60_000 }));
      await eventually(
        'the long statements running on the target',
        async () =>
          (
            await rig.targetQuery<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`,
              [`%${marker}%`],
            )
          )[0].n >= 2 || false,
        20_000,
      );
      const sentAt = performance.now();
      const exit = await signalAndWait(rig, 'SIGTERM');
      const answered = await Promise.all(long);
      stop = {
        ...exit,
        sentAt,
        long: answered.map((a) => ({ status: a.status, code: a.code, afterSignalMs: longSentAt + a.ms - sentAt })),
      };
    },
    async restore() {
      restartMs = await timedRestart(rig);
    },
    async notes(answers) {
      const inFlight = answers.filter((a) => a.start < stop.sentAt && a.start + a.ms > stop.sentAt);
      const during = answers.filter((a) => a.start >= stop.sentAt && a.start <= stop.sentAt + stop.ms);
      const long = stop.long
        .map((a) => `${a.status} ${a.code ?? ''} ${a.afterSignalMs.toFixed(0)} ms after SIGTERM`.replace('  ', ' '))
        .join(', ');
      return [
        `exit code ${stop.code} ${stop.ms.toFixed(0)} ms after SIGTERM`,
        `in flight at SIGTERM: ${byLabel(inFlight) || 'none'}`,
        `sent until exit: ${byLabel(during) || 'none'}`,
        `long reads: ${long}`,
        `listening ${restartMs.toFixed(0)} ms after the restart`,
      ].join('; ');
    },
  };
}

const SCENARIOS: Array<() => Scenario> = [
  storeOutage,
  redisHang,
  () => targetFault('blackholed'),
  () => targetFault('down'),
  kill9,
  sigterm,
];

interface RoundFigures {
  byStatus: string;
  worstFailureMs: number | null;
  worstDuringMs: number | null;
  recoveryMs: number | null;
  acknowledged: number;
  lost: number;
  /** Not acknowledged / of those, in the target. */
  unacknowledged: string;
  alive: boolean;
  notes: string;
}

async function round(scenario: Scenario, rig: Rig, outageMs: number): Promise<RoundFigures> {
  progress(`${scenario.name}: waiting for dbq to serve`);
  await eventually('dbq serving', async () => await rig.healthy(), 60_000);
  progress(`${scenario.name}: load`);
  const load = rig.load();
  const warm = scenario.warmAnswers ?? 20;
  await eventually('answers under load', async () => load.answers.filter((a) => a.status === 200).length >= warm, 30_000);
  const faultAt = performance.now();
  progress(`${scenario.name}: inject`);
  await scenario.inject();
  await sleep(outageMs);
  progress(`${scenario.name}: restore`);
  const restoreBegan = performance.now();
  await scenario.restore();
  const restoredAt = scenario.clockFromRestoreStart ? restoreBegan : performance.now();
  const restoredEpoch = Date.now() - (performance.now() - restoredAt);
  const backAnswer = () => load.answers.find((a) => a.start >= restoredAt && a.status === 200);
  await eventually('a 200 after the fault', async () => (backAnswer() ? true : false), 30_000).catch(() => null);
  const otherRecovery = scenario.recovery ? await scenario.recovery(restoredEpoch) : undefined;
  await sleep(1_000);
  progress(`${scenario.name}: stopping the load`);
  const answers = await load.stop();
  const failures = answers.filter((a) => a.status !== 200 && a.start >= faultAt);
  const during = answers.filter((a) => a.start >= faultAt && a.start < restoreBegan);
  const firstBack = answers.find((a) => a.start >= restoredAt && a.status === 200);
  const { acknowledged, lost } = await rig.lost(answers);
  const unacknowledged = await unacknowledgedWrites(rig, answers);
  // Recovery is the first 200; failures may go on after it (a pool's dead connections, one by one).
  const failedAfter = answers.filter((a) => a.start >= restoredAt && a.status !== 200 && a.error !== 'ECONNREFUSED');
  const lastFailure = failedAfter.length ? Math.max(...failedAfter.map((a) => a.start + a.ms - restoredAt)) : 0;
  // Not in "worst failure" (sent before the fault), but hit by it when the fault is their own
  // connection's.
  const caught = answers.filter((a) => a.start < faultAt && a.start + a.ms > faultAt && a.status !== 200);
  const notes = [
    caught.length &&
      `in flight at the fault and failed: ${byLabel(caught)}, the slowest after ${Math.max(...caught.map((a) => a.ms)).toFixed(0)} ms`,
    failedAfter.length &&
      `${failedAfter.length} failed after the restore (${byLabel(failedAfter)}), the last answered ${lastFailure.toFixed(0)} ms after it`,
    unacknowledged.note,
    scenario.notes ? await scenario.notes(answers) : '',
  ]
    .filter(Boolean)
    .join('; ');
  return {
    byStatus: byLabel(answers),
    worstFailureMs: failures.length ? Math.max(...failures.map((a) => a.ms)) : null,
    worstDuringMs: during.length ? Math.max(...during.map((a) => a.ms)) : null,
    recoveryMs: otherRecovery !== undefined ? otherRecovery : firstBack ? firstBack.start + firstBack.ms - restoredAt : null,
    acknowledged,
    lost,
    unacknowledged: unacknowledged.column,
    alive: rig.alive(),
    notes,
  };
}

const machine = () =>
  `${os.cpus().length} cores (${os.cpus()[0]?.model.trim() ?? 'unknown'}), load average ${os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(' ')}`;

async function main(): Promise<void> {
  const print = (lines: string[]) => process.stdout.write(lines.join('\n') + '\n');
  const dbq = buildIsCurrent() ? 'its compiled build' : 'its sources through tsx (the build is older than src/), which slows start-up';
  print([`faults: machine ${machine()} at start; dbq runs ${dbq}`, '']);
  for (const scenario of SCENARIOS.map((make) => make()).filter((s) => !ONLY || s.name === ONLY)) {
    const rounds = ROUNDS ? Number(ROUNDS) : scenario.rounds;
    const outageMs = OUTAGE_MS ? Number(OUTAGE_MS) : scenario.outageMs;
    const lines = [
      `### ${scenario.name}: ${scenario.fault}`,
      '',
      `${outageMs} ms outage, ${rounds} rounds, load average ${os.loadavg()[0].toFixed(2)} at the start`,
      '',
      '| round | answers | worst failure ms | worst during fault ms | recovery ms | writes acknowledged | writes lost | writes not acknowledged / in target | dbq alive | notes |',
      '|---:|---|---:|---:|---:|---:|---:|---:|---|---|',
    ];
    const started = performance.now();
    try {
      progress(`${scenario.name}: setting up`);
      const rig = await scenario.setUp();
      try {
        for (let i = 1; i <= rounds; i++) {
          const f = await round(scenario, rig, outageMs);
          lines.push(
            `| ${i} | ${f.byStatus} | ${ms(f.worstFailureMs)} | ${ms(f.worstDuringMs)} | ${ms(f.recoveryMs)} | ${f.acknowledged} | ${f.lost} | ${f.unacknowledged} | ${f.alive ? 'yes' : 'NO'} | ${f.notes} |`,
          );
          if (!f.alive) break;
        }
      } finally {
        progress(`${scenario.name}: closing`);
        await rig.close();
      }
    } catch (err) {
      // One scenario's rig failing must not hide the others' figures.
      lines.push(`scenario failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 1;
    }
    lines.push('', `(${((performance.now() - started) / 1000).toFixed(0)} s)`, '');
    print(lines);
  }
  print([`machine ${machine()} at the end`]);
}

await main();
