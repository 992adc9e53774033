// dbq mcp --url <workspace_url>: the stdio bridge (src/cli/mcp-bridge.ts).
import type { Command } from 'commander';

export function mcpCommands(program: Command): void {
  program
    .command('mcp')
    .description(
      'serve MCP over stdio for clients that only launch local processes, relaying to {workspace_url}/mcp; the key comes from DBQ_API_KEY only',
    )
    .requiredOption('--url <workspace_url>', 'the workspace address, e.g. http://localhost:8080 or http://localhost:8080/w/<slug>')
    .action(async (opts: { url: string }) => {
      // Loaded on demand, like serve: the other commands need none of the MCP SDK.
      const { runMcpBridge } = await import('../mcp-bridge.ts');
      // The client's key, not a server setting, so it is not part of Config (src/config.ts).
      await runMcpBridge({ url: opts.url, apiKey: process.env.DBQ_API_KEY });
    });
}
