// Vite build of the web app (issue 6). `npm run build:web` (also run by `prepare`, so on every
// `npm install` / `npm ci`) writes dist/web/, which src/console/ serves: index.html as the shell
// of every page, assets under /ui/assets/ (hashed names, cached for good).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/ui/',
  publicDir: false,
  // Preact through esbuild's automatic JSX runtime: no framework plugin needed.
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: ['chrome111', 'firefox115', 'safari16.4'],
    sourcemap: false,
    chunkSizeWarningLimit: 1200,
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});
