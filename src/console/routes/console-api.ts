// {workspace_url}/ui/api/query|history|ai: the console. Queries go through runQuery (history
// source `ui`), so the guard, read-only mode, permissions and history are the API's own.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { generateInputSchema, runGenerate } from '../../ai/run-generate.ts';
import { listHistory, queryInteger } from '../../history/history.ts';
import { clientGoneController, clientGoneSignal } from '../../http-kit/client-gone.ts';
import { ok, parseInput } from '../../http-kit/schema.ts';
import { queryInputShape, runQuery } from '../../query/run.ts';
import type { Services } from '../../services.ts';
import type { Principal } from '../../workspaces/api-keys.ts';
import { webPrincipal } from '../web-context.ts';

const queryBody = z.object(queryInputShape).strict();
const historyQuery = z.object({ limit: queryInteger(1, 100).default(30) }).strict();
const askBody = z.object({ connectionId: z.string().min(1).max(200), prompt: z.string() }).strict();

/** The history panel shows the signed-in user's own queries, also for admins (whose API view
 * is the whole workspace): listHistory narrows to one user for non-admins, so it is asked
 * with the same user seen as a reader. */
function ownView(p: Principal): Principal {
  return { ...p, user: { ...p.user, role: 'read_only' } };
}

export function consoleApiRoutes(app: FastifyInstance, svc: Services): void {
  const schema = { hide: true };
  const config = { countsAgainstPlan: true };

  app.post('/query', { schema, config }, async (request, reply) => {
    const p = webPrincipal(request);
    const input = parseInput(queryBody, request.body);
    return ok(await runQuery(svc, p, input, { source: 'ui', controller: clientGoneController(request, reply) }));
  });

  app.get('/history', { schema }, async (request) => {
    const p = webPrincipal(request);
    const { limit } = parseInput(historyQuery, request.query);
    return ok(await listHistory(svc.db, ownView(p), { limit }, { reader: svc.historyReader }));
  });

  app.post('/ai/generate', { schema, config }, async (request, reply) => {
    const p = webPrincipal(request);
    // The Ask box only fills the editor; the person runs the SQL with Run, as source `ui`.
    const input = parseInput(generateInputSchema, { ...parseInput(askBody, request.body), execute: false });
    const generated = await runGenerate(svc, p, input, { source: 'ui', signal: clientGoneSignal(request, reply) });
    return ok(generated);
  });
}
