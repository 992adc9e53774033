import path from 'node:path';
import type { Config } from '../config.ts';
import { createConnection, getConnectionRow } from '../connections/connections.ts';
import { ConnectionNotFoundError } from '../errors.ts';
import { buildApp } from '../server/app.ts';
import { exitOnSignals, startServer } from '../server/server.ts';
import { ensureWorkspaceSqliteDir } from '../sqlite-files/sqlite-path.ts';
import { createSampleSqlite } from '../sample/load-sample.ts';
import { createServices, type Services } from '../services.ts';
import { ensureDefaultWorkspace, getWorkspace } from '../workspaces/workspaces.ts';
import { PLAN_LIMITS } from '../limits/plans.ts';
import { listUsers } from '../workspaces/users.ts';
import { frontDoors } from '../server/front-doors.ts';
import { issueSetupToken } from '../workspaces/setup-token.ts';
import { cliActor } from '../audit/audit.ts';
import { invokedAs } from './invoked-as.ts';
import { recordServeUrl } from './workspace-url.ts';

const SAMPLE_CONNECTION = 'sample';

/** Creates the sample shop database in `default`'s directory (DBQ_SQLITE_DIR/default/) and
 * connects it to `default`: it belongs to that workspace alone. */
export async function ensureSample(svc: Services): Promise<void> {
  const ws = await ensureDefaultWorkspace(svc.db, svc.config.defaultPlan);
  createSampleSqlite(path.join(ensureWorkspaceSqliteDir(svc.config.sqliteDir, ws.slug), 'sample.db'));
  try {
    await getConnectionRow(svc.db, ws.id, SAMPLE_CONNECTION);
  } catch (err) {
    if (!(err instanceof ConnectionNotFoundError)) throw err;
    const deps = { db: svc.db, secretBox: svc.secretBox, sqliteDir: svc.config.sqliteDir };
    await createConnection(deps, ws.id, { name: SAMPLE_CONNECTION, engine: 'sqlite', database: 'sample.db' }, cliActor());
  }
}

export async function serve(config: Config, opts: { sample: boolean }): Promise<void> {
  const svc = await createServices(config);
  if (opts.sample) await ensureSample(svc);
  const app = await buildApp(svc, frontDoors());
  const server = await startServer(svc, app, { host: config.host, port: config.port });
  exitOnSignals(server);
  const shown = server.url.replace('127.0.0.1', 'localhost');
  // The CLI's links (user create) point here, unless DBQ_PUBLIC_URL says otherwise.
  recordServeUrl(config.dataDir, shown);
  // As typed to start this server: `dbq` when installed globally, `./bin/dbq` in a checkout.
  const dbq = invokedAs();
  const users = await listUsers(svc.db, 'default');
  const lines = [
    '',
    `dbq is serving ${shown}`,
    `  API:  ${shown}/api   (workspace "default"; others at ${shown}/w/<slug>/api)`,
    `  Web:  ${shown}/   (console, API keys, users, connections; others at ${shown}/w/<slug>/)`,
    `  Docs: ${shown}/docs`,
    `  MCP:  ${shown}/sse?api_key=<key>  or  ${shown}/mcp`,
  ];
  if (opts.sample) lines.push(`  Sample SQLite shop database connected as "${SAMPLE_CONNECTION}".`);
  // A newcomer on the free plan hit 429s from their own console with nothing saying why.
  const ws = await getWorkspace(svc.db, 'default');
  const limit = PLAN_LIMITS[ws.plan];
  lines.push(
    `  Plan: workspace "default" is on plan ${ws.plan} (${limit === null ? 'no request limit' : `${limit} requests a minute`}); change it with`,
    `        ${dbq} workspace set-plan default free|professional|enterprise   (new workspaces: DBQ_DEFAULT_PLAN=${config.defaultPlan})`,
  );
  if (!config.storeUrl) lines.push(`  Store: ${config.dataDir}  (admin commands elsewhere: ${dbq} --data-dir ${config.dataDir} …)`);
  if (users.length === 0) {
    // One-time link for the web app's first admin (src/workspaces/setup-token.ts); dead once a user exists.
    const setupToken = await issueSetupToken(svc.db, 'default');
    if (setupToken) {
      lines.push('', 'No users yet. Create the first admin in the browser (this link works once):', `  ${shown}/setup?token=${setupToken}`);
    }
    lines.push(
      '',
      'Or, with the CLI, create the first admin and an API key (in another terminal);',
      'user create prints a one-time link that sets the web sign-in password:',
      `  ${dbq} user create --workspace default --email you@example.com --role admin`,
      `  ${dbq} key create --workspace default --user you@example.com --name first-key`,
      'then:',
      `  curl -s ${shown}/api/connections -H "Authorization: Bearer <key>"`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}
