// The three test tiers: vitest.config.ts turns these lists into the vitest projects
// `unit`, `sqlite` and `integration`; test/test-tiers.test.ts fails while a test file is in no
// list, in two, or a listed file is gone. Files are listed, not moved or renamed, so history
// and the other engineers' paths stay put.
//
// unit         No service, no network, no child process: pure modules fed synthetic input
//              (catalog rows, driver error objects, config values). Enforced at run time by
//              test/support/unit-isolation.ts, which makes every socket and process spawn throw.
// sqlite       No server: the embedded SQLite store, SQLite connection files, dbq's own child
//              processes (the CLI, the SQLite runner) and loopback listeners it starts itself.
//              Never PostgreSQL, MariaDB, Redis, sshd or a browser (test/support/sqlite-isolation.ts
//              refuses their ports in-process). Dialing a closed port (5999) to prove an error
//              path is allowed: nothing has to be running.
// integration  Everything else: real PostgreSQL, MariaDB, Redis, sshd, Chromium.
//
// A new test file: put it in the narrowest tier it fits. `npm run test:unit` should stay
// a matter of seconds; a slow pure test belongs in unit all the same.

export const UNIT_TESTS: readonly string[] = [
  'test/web-audit-actions-match.test.ts',
  'test/annotations-merge-unit.test.ts',
  // The builtin AI generator's passes and SQL on a hand-made shop schema; no database.
  'test/ai-build-sql-and-explanation.test.ts',
  'test/ai-explanations-plain-english.test.ts',
  'test/ai-long-question-bounded.test.ts',
  'test/ai-set-questions.test.ts',
  'test/ai-parse-aggregates-pass.test.ts',
  'test/ai-parse-assemble.test.ts',
  'test/ai-parse-check-grounds.test.ts',
  'test/ai-parse-comparisons-pass.test.ts',
  'test/ai-parse-dates-pass.test.ts',
  'test/ai-parse-equalities-pass.test.ts',
  'test/ai-parse-group-by-pass.test.ts',
  'test/ai-parse-head-pass.test.ts',
  'test/ai-parse-leftovers-pass.test.ts',
  'test/ai-parse-likes-pass.test.ts',
  'test/ai-parse-merge-compounds-pass.test.ts',
  'test/ai-parse-negations-pass.test.ts',
  'test/ai-parse-order-by-pass.test.ts',
  'test/ai-parse-pass-order.test.ts',
  'test/ai-parse-refuse-writes-pass.test.ts',
  'test/ai-parse-subject-pass.test.ts',
  'test/ai-parse-superlative-pass.test.ts',
  'test/ai-parse-top-n-pass.test.ts',
  'test/ai-parse-values-pass.test.ts',
  'test/catalog-check-xid-arithmetic.test.ts',
  'test/cli-links-and-words.test.ts',
  'test/config-docs.test.ts',
  'test/configuration-docs-complete.test.ts',
  'test/error-table.test.ts',
  'test/guard-verdict-cache.test.ts',
  'test/ids-order.test.ts',
  'test/live-map-removed-values-not-promoted.test.ts',
  'test/mysql-view-reach.test.ts',
  'test/pg-store-disk-full.test.ts',
  // The hand-built query input against zod's output: pure functions.
  'test/query-input-plain.test.ts',
  'test/read-policy-types-in-play.test.ts',
  'test/redis-breaker.test.ts',
  'test/stop-controller.test.ts',
  // Builds pg.DatabaseError objects to classify; never connects.
  'test/store-errors.test.ts',
  'test/test-tiers.test.ts',
];

export const SQLITE_TESTS: readonly string[] = [
  'test/serve-banner-invoked-command.test.ts',
  // Single sign-on: a silent or oversized identity provider cannot stall sign-ins (loopback sockets).
  'test/sso-discovery-bounded.test.ts',
  // dbq workspace set-sso|show-sso|remove-sso through ./bin/dbq.
  'test/sso-cli.test.ts',
  // Forged SSO callbacks: refused, limited per address, audit bounded.
  'test/sso-callback-limited.test.ts',
  'test/sso-subject-binds-user.test.ts',
  'test/history-abandoned-running-failed.test.ts',
  // Its own node:http stand-in for the AI providers on 127.0.0.1, the sample SQLite database.
  'test/ai-providers.test.ts',
  // Annotations in /ai/generate: the builtin on a SQLite file, an OpenAI stand-in on 127.0.0.1.
  'test/annotations-ai.test.ts',
  // A 200-table schema through the OpenAI provider's stand-in on 127.0.0.1 and the sample database.
  'test/annotations-large-schema.test.ts',
  'test/audit-web.test.ts',
  // dbq backup/restore in child processes on SQLite stores; the PostgreSQL refusal dials nothing.
  'test/backup-restore-cli.test.ts',
  'test/migrate-status.test.ts',
  // A migrated SQLite store in a temp dir: every table classified for dbq secret rotate.
  'test/secret-rotate-tables.test.ts',
  'test/body-limit-413-delivery.test.ts',
  // Runs ./bin/dbq in child processes against a SQLite store.
  'test/cli-newcomer.test.ts',
  // Mounts a small tmpfs (root) under the SQLite store.
  'test/faults/disk-full.test.ts',
  'test/faults/sqlite-runner-parent-killed.test.ts',
  'test/history-search-off-loop.test.ts',
  // Stores a postgres:// connection to the closed port 5999 and tests it: nothing listens.
  'test/http-auth-envelope.test.ts',
  'test/http-envelope-methods-pages.test.ts',
  'test/http-malformed-requests.test.ts',
  'test/key-scope-unknown-tool.test.ts',
  'test/lookup-cache.test.ts',
  'test/mcp-session-id-secrecy.test.ts',
  'test/newcomer-answers.test.ts',
  // A PostgreSQL connection to the closed port 5999: the decision fails before any server.
  'test/regressions/13-history-when-decision-fails.test.ts',
  'test/regressions/23-regex-linear-time.test.ts',
  'test/scoped-admin-keys.test.ts',
  'test/sqlite-double-quoted-strings.test.ts',
  'test/sqlite-outside-files.test.ts',
  'test/sqlite-workspace-dirs.test.ts',
  'test/store-file-modes.test.ts',
  'test/web-plan-limit.test.ts',
  'test/web-sessions.test.ts',
];

export const INTEGRATION_TESTS: readonly string[] = [
  'test/secret-key-lost-clear-error.test.ts',
  // dbq store copy into fresh PostgreSQL databases, and dbq serve on the copy.
  'test/store-copy.test.ts',
  // OAuth 2.1 for agents against real dbq servers over HTTP, SQLite and PostgreSQL stores.
  'test/oauth-flow.test.ts',
  'test/oauth-grant-scope.test.ts',
  'test/oauth-client-metadata.test.ts',
  'test/oauth-revocation-cross-process.test.ts',
  // dbq secret rotate on SQLite and PostgreSQL stores, with dbq serve on real connections.
  'test/secret-rotate.test.ts',
  // A private PostgreSQL cluster with ssl=on and certificates made by openssl in the test.
  'test/db-tls-ca.test.ts',
  // A private MariaDB with TLS (mariadb-install-db, mariadbd on a free port).
  'test/db-tls-ca-mysql.test.ts',
  // Debian's nginx (docs/tls.md's example) in front of a real dbq serve.
  'test/tls-proxy-nginx.test.ts',
  'test/ai-builtin.test.ts',
  'test/allowlists.test.ts',
  'test/annotations-api.test.ts',
  'test/annotations-browser.test.ts',
  'test/annotations-cli.test.ts',
  'test/async-query.test.ts',
  'test/async-cross-process.test.ts',
  'test/audit-api.test.ts',
  'test/audit-browser.test.ts',
  'test/audit-cli.test.ts',
  'test/audit-log.test.ts',
  'test/catalog-check-blind-spots.test.ts',
  'test/catalog-check-late-commit.test.ts',
  'test/cli.test.ts',
  'test/client-disconnect.test.ts',
  'test/connection-error-no-password-oracle.test.ts',
  'test/connection-grants.test.ts',
  'test/connection-targets.test.ts',
  'test/csv-formula-guard.test.ts',
  'test/deep-json-value.test.ts',
  'test/engine-readonly-timeout.test.ts',
  'test/engine-session-isolation.test.ts',
  'test/engine-values.test.ts',
  'test/export-formats.test.ts',
  'test/export.test.ts',
  'test/faults/deadline-blackholed-target.test.ts',
  'test/faults/redis-hung-breaker.test.ts',
  'test/faults/sigterm-with-mcp-clients.test.ts',
  'test/faults/store-outage.test.ts',
  'test/graceful-shutdown.test.ts',
  'test/grants-one-transaction.test.ts',
  'test/history-indexes.test.ts',
  'test/history-search-index.test.ts',
  'test/history-shutdown-pg.test.ts',
  'test/http-query.test.ts',
  'test/json-depth-bounded.test.ts',
  'test/lazy-loading.test.ts',
  'test/leading-comment-statements.test.ts',
  'test/least-privilege-matrix.test.ts',
  'test/mcp-concurrency.test.ts',
  'test/mcp-cross-process.test.ts',
  'test/mcp-modern-revision.test.ts',
  'test/mcp-modern-two-processes.test.ts',
  'test/mcp-params-shape.test.ts',
  'test/mcp-rate-limit.test.ts',
  'test/mcp-readonly.test.ts',
  'test/mcp-revocation.test.ts',
  'test/mcp-session-caps.test.ts',
  'test/mcp-session-heap.test.ts',
  'test/mcp-shutdown.test.ts',
  'test/mcp-sse.test.ts',
  'test/mcp-stdio-bridge.test.ts',
  'test/mcp-streamable.test.ts',
  'test/mcp-tools.test.ts',
  'test/multi-process-redis-outage.test.ts',
  'test/multi-process.test.ts',
  'test/param-count-mismatch.test.ts',
  'test/pg-read-not-rerun.test.ts',
  'test/pg-read-pipeline.test.ts',
  'test/privilege-audit.test.ts',
  'test/query-params-shape.test.ts',
  'test/rate-limit-database-busy.test.ts',
  'test/rate-limit.test.ts',
  'test/reader-credentials.test.ts',
  'test/readonly-analytic-reads.test.ts',
  'test/readonly-attacks.test.ts',
  'test/readonly-guard.test.ts',
  'test/readonly-plan-only-explain-mysql.test.ts',
  'test/readonly-plan-only-explain.test.ts',
  'test/readonly-v2-attacks.test.ts',
  'test/readonly-v2-mysql-sqlite.test.ts',
  'test/readonly-v3-mysql-plan-only.test.ts',
  'test/readonly-v3-planner-attacks.test.ts',
  'test/readonly-v3-type-aware-operators.test.ts',
  'test/read-teardown-only-when-session-touched.test.ts',
  'test/regressions/14-guard-linear-time.test.ts',
  'test/regressions/5-setup-token-race.test.ts',
  'test/request-log-lines.test.ts',
  'test/request-messages-name-the-field.test.ts',
  'test/result-size-cap.test.ts',
  'test/scoped-keys-browser.test.ts',
  'test/scoped-keys.test.ts',
  'test/search-objects.test.ts',
  'test/ssh-tunnel.test.ts',
  'test/store-backends.test.ts',
  'test/store-change-notify.test.ts',
  'test/tool-pattern-linear-time.test.ts',
  'test/tools-mcp.test.ts',
  'test/tools-run.test.ts',
  'test/web-browser.test.ts',
  'test/web-console-polish.test.ts',
  'test/web-newcomer-browser.test.ts',
  'test/web-passwords-browser.test.ts',
  // Single sign-on through Chromium against a real OIDC provider (oidc-provider) on loopback.
  'test/sso-browser.test.ts',
  // Single sign-on settings over REST on both stores, password sign-in off.
  'test/sso-settings.test.ts',
  'test/web-sign-in-redirect.test.ts',
  'test/web-ssh-form.test.ts',
  'test/web-tls-form.test.ts',
  'test/tool-try-unsaved-browser.test.ts',
  'test/web-tools-browser.test.ts',
  // The MCP SDK's own OAuth flow with the consent clicked in Chromium.
  'test/oauth-consent-e2e.test.ts',
];

/** The machine's service ports the sqlite tier must never dial: PostgreSQL, MariaDB, Redis. */
export const SERVICE_PORTS: readonly number[] = [5432, 3306, 6379];
