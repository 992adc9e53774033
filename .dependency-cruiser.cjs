// The rooms of src/ and what each may import (ARCHITECTURE.md, "Rooms"). `npm run depcheck`
// fails on any violation that is not in .dependency-cruiser-known-violations.json: the
// baseline of violations accepted for now (empty once the last one was removed), so a rule can
// arrive before all the code obeys it without a new breach slipping in beside the old ones.
// Only after removing a violation does `npm run depcheck:baseline` rewrite the file, so the
// baseline can only shrink by hand-review, never grow unnoticed.
//
//   server  src/server                                   the process shell: builds the Fastify app and
//                                                        mounts the doors; only the CLI (whose
//                                                        `serve` starts it) imports it
//   doors   src/cli, src/http, src/mcp, src/console      no door imports another door
//   kit     src/http-kit                                 what the HTTP-served doors share (caller
//                                                        authentication, request schemas, the error
//                                                        envelope); imports core, no door
//   root    src/services.ts                              builds core; imports no door
//   core    src/query, guard, access, tools, audit,
//           history, ai, schema, annotations, limits, workspaces,
//           connections, secrets, sqlite-files, sso      imports no door, no kit
//   bottom  src/engines, src/store                       imports no core, no door, not root
//   base    src/*.ts but services.ts, src/sample         imports nothing of ours but base
//
// Layer rules count type-only imports too (a type from a door is still knowledge of the door);
// the cycle rule follows runtime imports only (`import type` is erased, so it cannot make a
// load-order cycle).

const SERVER = '^src/server/';
const DOORS = '^src/(cli|http|mcp|console)/';
const KIT = '^src/http-kit/';
const CORE =
  '^src/(query|guard|access|tools|audit|history|ai|schema|annotations|limits|workspaces|connections|secrets|sqlite-files|sso|oauth)/';
const BOTTOM = '^src/(engines|store)/';
const ROOT = '^src/services\\.ts$';
const BASE = '^src/([^/]+\\.(ts|mjs)|sample/)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'door-to-door',
      severity: 'error',
      comment: 'A door (cli, http, mcp, console) imports another door. Move what both need below the doors (core, or a neutral room).',
      from: { path: '^src/(cli|http|mcp|console)/' },
      to: { path: DOORS, pathNot: '^src/$1/' },
    },
    {
      name: 'kit-to-door',
      severity: 'error',
      comment: 'src/http-kit imports a door or the server shell. The kit sits below every door.',
      from: { path: KIT },
      to: { path: [DOORS, SERVER] },
    },
    {
      name: 'door-to-server',
      severity: 'error',
      comment: 'Only the CLI (the process entry; `dbq serve` starts the server) imports src/server.',
      from: { path: '^src/(http|mcp|console)/' },
      to: { path: SERVER },
    },
    {
      name: 'core-to-door',
      severity: 'error',
      comment: 'Core (or the composition root) imports a door. Doors call core, never the other way.',
      from: { path: [CORE, ROOT] },
      to: { path: [DOORS, KIT, SERVER] },
    },
    {
      name: 'bottom-to-upper',
      severity: 'error',
      comment: 'engines/ or store/ imports core, a door or services.ts. Pass what they need in as arguments.',
      from: { path: BOTTOM },
      to: { path: [CORE, DOORS, KIT, SERVER, ROOT] },
    },
    {
      name: 'base-to-room',
      severity: 'error',
      comment: 'A shared top-level module (config, errors, ids, logger, …) imports a room. Base modules sit below everything.',
      from: { path: BASE, pathNot: ROOT },
      to: { path: [DOORS, KIT, SERVER, CORE, BOTTOM, ROOT] },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A runtime import cycle. Type-only imports are not followed.',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.mjs', '.js', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
