// One McpServer per session (the SDK binds a server to one transport). Building one is cheap:
// the tool schemas are module constants and registration only records them.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Services } from '../services.ts';
import { principalFromExtra } from './sessions.ts';
import { registerTools } from './tools/index.ts';

export const SERVER_INFO = { name: 'dbq', title: 'dbq — SQL on your workspace databases', version: '1' };

const INSTRUCTIONS = [
  'dbq runs SQL on the PostgreSQL, MySQL/MariaDB and SQLite connections of one workspace, with the permissions of the API key this session uses.',
  'Start with list_connections, then list_tables / describe_table to learn the schema, then execute_query with one statement in the connection\'s dialect.',
  'Read-only keys and read-only connections can run read statements only; refused calls say so — do not retry them in another form.',
  'Results are capped (maxRows, default 1000); prefer aggregates and LIMIT over large reads.',
].join(' ');

export function createMcpServer(svc: Services, log: FastifyBaseLogger): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  registerTools(server, svc, { principalOf: async (extra) => principalFromExtra(extra), log });
  return server;
}
