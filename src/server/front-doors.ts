// The front doors the server mounts beside the REST API. Each issue that adds one (MCP, AI,
// exports, web pages) registers it here, so `dbq serve` and the tests' servers agree.
import { mcpPlugin } from '../mcp/plugin.ts';
import { webApp } from '../console/plugin.ts';
import type { AppOptions } from './app.ts';

export function frontDoors(): AppOptions {
  return { apiRoutes: [], plugins: [mcpPlugin(), webApp()] };
}
