// bench/guard-adversarial: what adversarial 100 KB statements cost the guard (issue 14, item 3).
// For each input and dialect: the guard's wall time (classifyStatement: long text goes to the
// worker thread), the longest the event loop was held meanwhile (a 1 ms ticker), and the
// baseline measured in the same run — the dialect's parser alone, on the event loop, on the
// same text (what the guard would cost had it stayed in-thread). Targets: event loop < 50 ms.
// Usage: node --import tsx bench/guard-adversarial.ts
import { createRequire } from 'node:module';
import { loadModule, parseSync } from 'libpg-query';
import { ENGINE_NAMES, type EngineName } from '../src/engines/engine.ts';
import { classifyStatement } from '../src/sql/guard.ts';

const SIZE = 99_000;
const INPUTS: Record<string, string> = {
  'empty statements (30k `;`)': 'SELECT 1;' + "'';".repeat(Math.floor((SIZE - 9) / 3)),
  'deep parentheses (30k)': 'SELECT ' + '('.repeat(30_000) + '1' + ')'.repeat(30_000),
  '20k-item IN list': 'SELECT 1 WHERE 1 IN (' + Array.from({ length: 20_000 }, (_, i) => i % 1000).join(',') + ')',
  'long identifier': 'SELECT ' + 'a'.repeat(SIZE),
  'long comment': 'SELECT 1 /*' + 'x'.repeat(SIZE) + '*/',
  'long string': "SELECT '" + 'x'.repeat(SIZE) + "'",
  '9k function calls': 'SELECT ' + Array.from({ length: 9_000 }, () => 'lower(a)').join(','),
};

const requireParser = createRequire(import.meta.url);
type Astify = { astify(text: string, opts: { database: string }): unknown };

function rawParse(engine: EngineName, sql: string): void {
  try {
    if (engine === 'postgres') parseSync(sql);
    else {
      const { Parser } = requireParser(`node-sql-parser/build/${engine === 'mysql' ? 'mysql' : 'sqlite'}`) as { Parser: new () => Astify };
      new Parser().astify(sql, { database: engine === 'mysql' ? 'mysql' : 'sqlite' });
    }
  } catch {
    // A parse error is a result too: the time is what counts.
  }
}

async function held(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  await work();
  await new Promise((resolve) => setTimeout(resolve, 3));
  clearInterval(ticker);
  return Math.max(longest, performance.now() - last);
}

await loadModule();
for (const engine of ENGINE_NAMES) await classifyStatement(engine, `SELECT ${'1 + '.repeat(5_000)}1`);
const rows: string[] = [];
for (const engine of ENGINE_NAMES) {
  for (const [name, sql] of Object.entries(INPUTS)) {
    let wall = 0;
    const loop = await held(async () => {
      const started = performance.now();
      await classifyStatement(engine, sql + ' '.repeat(Math.floor(Math.random() * 8)));
      wall = performance.now() - started;
    });
    const started = performance.now();
    rawParse(engine, sql);
    const baseline = performance.now() - started;
    rows.push(`| ${engine} | ${name} | ${sql.length} | ${wall.toFixed(1)} | ${loop.toFixed(1)} | ${baseline.toFixed(1)} |`);
  }
}
process.stdout.write(
  [
    'guard-adversarial: ms per statement (the event-loop column is the target: < 50 ms)',
    '',
    '| dialect | input | chars | guard wall | event loop held | baseline: parser alone, in-thread |',
    '|---|---|---:|---:|---:|---:|',
    ...rows,
    '',
  ].join('\n'),
);
