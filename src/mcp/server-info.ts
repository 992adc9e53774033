// What dbq's MCP server says about itself, the same in every revision it serves: the
// 2025-era sessions (server.ts, SDK v1) and the 2026-07-28 requests (modern-server.ts, SDK v2).
export const SERVER_INFO = { name: 'dbq', title: 'dbq — SQL on your workspace databases', version: '1' };

export const INSTRUCTIONS = [
  'dbq runs SQL on the PostgreSQL, MySQL/MariaDB and SQLite connections of one workspace, with the permissions of the API key the client sends.',
  "Start with list_connections, then list_tables / describe_table to learn the schema, then execute_query with one statement in the connection's dialect.",
  'Curated tools (any tool not named above) are prepared statements an admin defined: prefer them when one fits, and pass their parameters as arguments.',
  'Read-only keys and read-only connections can run read statements only; refused calls say so — do not retry them in another form.',
  'Results are capped (maxRows, default 1000); prefer aggregates and LIMIT over large reads.',
].join(' ');
