// One MCP Server per session (the SDK binds a server to one transport). Building one is cheap:
// the built-in tool schemas are module constants, and the curated tools are read per tools/list.
// While the session is open it watches its workspace's curated tools and sends
// notifications/tools/list_changed when the set this session's key may run changes, whichever
// process changed it (src/tools/tool-changes.ts); the watch ends with the session.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { FastifyBaseLogger } from 'fastify';
import { listTools } from '../tools/tools.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { principalFromExtra } from './sessions.ts';
import { INSTRUCTIONS, SERVER_INFO } from './server-info.ts';
import { registerTools } from './tools/index.ts';

export function createMcpServer(svc: Services, log: FastifyBaseLogger, principal: Principal): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: true } }, instructions: INSTRUCTIONS });
  registerTools(server, svc, { principalOf: async (extra) => principalFromExtra(extra), log });
  watchCuratedTools(server, svc, log, principal);
  return server;
}

/** The names and versions this principal may run: what a list_changed is about. */
async function signatureOf(svc: Services, principal: Principal): Promise<string> {
  return (await listTools(svc, principal)).map((t) => `${t.name}@${t.version}`).join(',');
}

function watchCuratedTools(server: Server, svc: Services, log: FastifyBaseLogger, principal: Principal): void {
  let unsubscribe: (() => void) | null = null;
  let closed = false;
  // From initialization on: a client that never finishes the handshake holds no watch.
  server.oninitialized = () => {
    if (closed || unsubscribe) return;
    let last = signatureOf(svc, principal).catch(() => '');
    unsubscribe = svc.toolChanges.subscribe(principal.workspace.id, () => {
      last = last.then(async (before) => {
        if (closed) return before;
        const now = await signatureOf(svc, principal).catch(() => before);
        if (now !== before && !closed) {
          await server.sendToolListChanged().catch((err: unknown) => log.info({ err }, 'mcp tools/list_changed not delivered'));
        }
        return now;
      });
    });
  };
  server.onclose = () => {
    closed = true;
    unsubscribe?.();
    unsubscribe = null;
  };
}
