// `npm run build`: compiles src/ to dist/server/ (tsc, with the relative `.ts` imports rewritten
// to `.js`) and copies the non-TypeScript files src/ ships (the SQLite runner, the sample
// database's SQL) beside the compiled modules. bin/dbq runs this build when it is at least as
// new as every file under src/, and the TypeScript sources through tsx otherwise.
// Without TypeScript (a production install with --omit=dev) it says so and leaves dbq on tsx.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist/server');
const tsc = path.join(root, 'node_modules/typescript/bin/tsc');

if (!fs.existsSync(tsc)) {
  console.log('dbq: typescript is not installed (production install); dbq runs from its sources through tsx.');
  process.exit(0);
}
// Built beside the old build and swapped in at the end, so a dbq starting during a rebuild
// finds either the old build or the new one, never half of one.
const next = `${out}.next-${process.pid}`;
fs.rmSync(next, { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'), '--outDir', next], { stdio: 'inherit' });
if (result.status !== 0) {
  fs.rmSync(next, { recursive: true, force: true });
  process.exit(result.status ?? 1);
}
for (const file of fs.readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' })) {
  const from = path.join(root, 'src', file);
  if (fs.statSync(from).isFile() && !file.endsWith('.ts')) fs.copyFileSync(from, path.join(next, file));
}
const old = `${out}.old-${process.pid}`;
if (fs.existsSync(out)) fs.renameSync(out, old);
fs.renameSync(next, out);
fs.rmSync(old, { recursive: true, force: true });
