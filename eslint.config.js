// ESLint with typescript-eslint (issue 25, "Lint and format"). The point is the type-aware
// rules that catch real bugs: a promise nobody awaits or catches (no-floating-promises: an
// unhandled rejection kills the process), a promise where a callback's result is ignored
// (no-misused-promises: an async Fastify hook or event listener whose failure vanishes), and
// unused values. The rest is typescript-eslint's `recommended` set, minus the rules that would
// flag deliberate patterns of this codebase (listed with the reason below). Formatting is
// Prettier's job (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // bin/, scripts' .mjs and the config files are plain JavaScript outside every tsconfig.
    ignores: [
      'dist/**',
      'node_modules/**',
      'data/**',
      'scratch-*/**',
      'bin/**',
      '**/*.mjs',
      '**/*.cjs',
      '**/*.config.js',
      '**/*.config.ts',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: {
        // One program per tsconfig the files belong to: tsconfig.json (src, test, bench,
        // scripts) and web/tsconfig.json (the web app).
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The bug catchers, type-aware.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-for-in-array': 'error',
      '@typescript-eslint/no-implied-eval': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Tuned off: the SQL lexers and guards match control characters on purpose.
      'no-control-regex': 'off',
      // `any` is how tests read JSON bodies and how a few driver shapes are narrowed; the
      // no-unsafe-* family (not enabled) would be the way to tighten this later.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // Preact's `onClick={async () => …}`: the event system ignores the returned promise by
    // design; the handlers catch and show their own errors. Promises passed where a callback's
    // result matters (hooks, listeners, array callbacks) are still checked.
    files: ['web/src/**/*.tsx'],
    rules: { '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }] },
  },
);
