// The front doors the server mounts beside the REST API (MCP, the web console). A new door is
// registered here, so `dbq serve` and the tests' servers mount the same ones.
import { mcpPlugin } from '../mcp/plugin.ts';
import { webApp } from '../console/plugin.ts';
import type { AppOptions } from './app.ts';

export function frontDoors(): AppOptions {
  return { plugins: [mcpPlugin(), webApp()] };
}
