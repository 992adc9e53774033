// bench/faults: what clients see when something dbq depends on fails under load, and how fast
// it comes back (issue 24). One scenario at a time, each run in rounds against a real dbq
// process (bin/dbq) with a closed loop of reads and writes over HTTP; per round:
//   answers       — by status and code, over the whole round (before, during, after the fault)
//   worst failure — the slowest answer that was not a 200, among requests sent after the fault
//                   began (one in flight at that moment waits on its own statement first)
//   recovery      — from the dependency being back to the first 200 sent after that
//   writes lost   — writes answered 200 that are missing from the target table or from the
//                   history as `succeeded`: must be 0
//   alive         — the dbq process never exited
// Scenarios: SCENARIOS below; each brings its own rig (test/support/) and says what its fault
// is. To add one (a hung Redis, a blackholed target), write a Scenario with setUp/fault/restore
// and add it there; the measuring and the table are shared.
// dbq runs as bin/dbq does: its build when current, else the sources through tsx (the figures
// are about failing and recovering, not throughput, so no build is forced).
// Usage: node --import tsx bench/faults.ts [--scenario store-outage] [--rounds 3] [--outage-ms 3000]
import os from 'node:os';
import { eventually, lostAcknowledgedWrites, startStoreRig, type Answer, type LoadHandle, type StoreRig } from '../test/support/fault-rig.ts';
import { http } from '../test/support/processes.ts';
import { option } from './support/args.ts';

const ROUNDS = Number(option('rounds', '3'));
const OUTAGE_MS = Number(option('outage-ms', '3000'));
const ONLY = option('scenario', '');
const READERS = 2;
const WRITERS = 2;

interface Rig {
  /** The dbq process is still running. */
  alive(): boolean;
  load(): LoadHandle;
  /** A request that answers 200 once dbq serves normally. */
  healthy(): Promise<boolean>;
  lost(answers: Answer[]): Promise<{ acknowledged: number; lost: number }>;
  close(): Promise<void>;
}

interface Scenario {
  name: string;
  /** What the fault is, for the table's heading. */
  fault: string;
  setUp(): Promise<Rig>;
  /** Breaks the dependency; resolves once it is broken. */
  inject(rig: Rig): Promise<void>;
  /** Brings it back; resolves once it is back (the recovery clock starts then). */
  restore(rig: Rig): Promise<void>;
}

let storeRig: StoreRig | null = null;

const SCENARIOS: Scenario[] = [
  {
    name: 'store-outage',
    fault: 'the PostgreSQL store stopped with `pg_ctl stop -m immediate`, started again after the outage',
    async setUp() {
      const rig = await startStoreRig({ logLevel: 'warn' });
      storeRig = rig;
      const healthy = async () => (await http('POST', `${rig.dbq.url}/api/query`, rig.key, { connectionId: 'pg', sql: 'SELECT 1' })).status === 200;
      return {
        alive: () => rig.dbq.child.exitCode === null && rig.dbq.child.signalCode === null,
        load: () => rig.load({ readers: READERS, writers: WRITERS }),
        healthy,
        async lost(answers) {
          const l = await lostAcknowledgedWrites(rig, answers);
          return { acknowledged: l.acknowledged, lost: l.missingInTarget.length + l.missingInHistory.length };
        },
        close: () => rig.close(),
      };
    },
    inject: () => storeRig!.cluster.stop('immediate'),
    restore: () => storeRig!.cluster.start(),
  },
];

interface RoundFigures {
  byStatus: string;
  worstFailureMs: number | null;
  recoveryMs: number | null;
  acknowledged: number;
  lost: number;
  alive: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function round(scenario: Scenario, rig: Rig): Promise<RoundFigures> {
  await eventually('dbq serving', async () => await rig.healthy(), 30_000);
  const load = rig.load();
  await eventually('answers under load', async () => load.answers.filter((a) => a.status === 200).length >= 20, 30_000);
  const faultAt = performance.now();
  await scenario.inject(rig);
  await sleep(OUTAGE_MS);
  await scenario.restore(rig);
  const restoredAt = performance.now();
  await eventually('a 200 after the fault', async () => load.answers.some((a) => a.start >= restoredAt && a.status === 200) || false, 30_000).catch(() => null);
  await sleep(1_000);
  const answers = await load.stop();
  const counts = new Map<string, number>();
  for (const a of answers) {
    const key = a.status === 200 ? '200' : a.status === 0 ? 'no answer' : `${a.status} ${a.code ?? ''}`.trim();
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const failures = answers.filter((a) => a.status !== 200 && a.start >= faultAt);
  const firstBack = answers.find((a) => a.start >= restoredAt && a.status === 200);
  const { acknowledged, lost } = await rig.lost(answers);
  return {
    byStatus: [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}: ${n}`).join(', '),
    worstFailureMs: failures.length ? Math.max(...failures.map((a) => a.ms)) : null,
    recoveryMs: firstBack ? firstBack.start + firstBack.ms - restoredAt : null,
    acknowledged,
    lost,
    alive: rig.alive(),
  };
}

async function main(): Promise<void> {
  const lines: string[] = [`faults: ${READERS} readers + ${WRITERS} writers over HTTP, ${OUTAGE_MS} ms outage, ${ROUNDS} rounds, ${os.cpus().length} cores`, ''];
  for (const scenario of SCENARIOS.filter((s) => !ONLY || s.name === ONLY)) {
    const rig = await scenario.setUp();
    try {
      lines.push(`### ${scenario.name}: ${scenario.fault}`, '', '| round | answers | worst failure ms | recovery ms | writes acknowledged | writes lost | dbq alive |', '|---:|---|---:|---:|---:|---:|---|');
      for (let i = 1; i <= ROUNDS; i++) {
        const f = await round(scenario, rig);
        const ms = (v: number | null) => (v === null ? '—' : v.toFixed(0));
        lines.push(`| ${i} | ${f.byStatus} | ${ms(f.worstFailureMs)} | ${ms(f.recoveryMs)} | ${f.acknowledged} | ${f.lost} | ${f.alive ? 'yes' : 'NO'} |`);
        if (!f.alive) break;
      }
      lines.push('');
    } finally {
      await rig.close();
    }
  }
  process.stdout.write(lines.join('\n') + '\n');
}

await main();
