// Whether dist/server (the compiled server, `npm run build`) is at least as new as every file
// under src/: bin/dbq runs the build only then, and the benches check it before measuring.
import fs from 'node:fs';

const root = new URL('../', import.meta.url);
export const BUILT_MAIN = new URL('dist/server/cli/main.js', root);

function newestUnder(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, fs.statSync(`${entry.parentPath ?? entry.path}/${entry.name}`).mtimeMs);
  }
  return newest;
}

export function buildIsCurrent() {
  try {
    return fs.statSync(BUILT_MAIN).mtimeMs >= newestUnder(new URL('src/', root));
  } catch {
    return false;
  }
}
