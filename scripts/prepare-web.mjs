// npm `prepare`: builds the web app's assets (dist/web) after `npm install` / `npm ci`.
// Vite is a dev dependency, so a production install (`npm ci --omit=dev`) skips the build and
// says so instead of failing; a real build error still fails the install.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

if (!existsSync(new URL('../node_modules/vite/package.json', import.meta.url))) {
  console.log(
    'dbq: vite is not installed (production install); skipping the web build. Build dist/web on a machine with dev dependencies.',
  );
  process.exit(0);
}
const result = spawnSync('npm', ['run', 'build:web'], { stdio: 'inherit' });
process.exit(result.status ?? 1);
