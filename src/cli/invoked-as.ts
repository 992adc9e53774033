// The command to type for dbq, as this process was started: the banner and hints print it, so
// a global install reads `dbq user create …` and a checkout `./bin/dbq user create …`.
import fs from 'node:fs';
import path from 'node:path';

function real(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

export function invokedAs(script = process.argv[1] ?? '', cwd = process.cwd(), envPath = process.env.PATH ?? ''): string {
  if (!script) return 'dbq';
  const target = real(script);
  // On the PATH as `dbq` (a global install, npm link): the bare name.
  for (const dir of envPath.split(path.delimiter).filter(Boolean)) {
    const candidate = real(path.join(dir, 'dbq'));
    if (candidate !== null && candidate === target) return 'dbq';
  }
  const rel = path.relative(cwd, script);
  if (rel.split(path.sep).includes('node_modules')) return 'npx dbq';
  if (!rel.startsWith('..') && !path.isAbsolute(rel)) return `.${path.sep}${rel}`;
  return script;
}
