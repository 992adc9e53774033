// {workspace_url}/ui/api/tools: the Tools page. The same core functions as /api/tools, with
// the session's principal; runs are history source `ui` and count against the plan, changes
// are audited with source `ui`.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import {
  createTool,
  createToolSchema,
  deleteTool,
  listTools,
  runTool,
  runToolSchema,
  updateTool,
  updateToolSchema,
} from '../../tools/tools.ts';
import { tryToolDraft } from '../../tools/tool-try.ts';
import { clientGoneController } from '../../http-kit/client-gone.ts';
import { ok, parseInput } from '../../http-kit/schema.ts';
import type { Services } from '../../services.ts';
import { webPrincipal } from '../web-context.ts';

const nameParams = z.object({ name: z.string().min(1).max(200) });

export function toolsApiRoutes(app: FastifyInstance, svc: Services): void {
  const schema = { hide: true };

  app.get('/tools', { schema }, async (request) => ok({ tools: await listTools(svc, webPrincipal(request)) }));

  app.post('/tools', { schema }, async (request, reply) => {
    const p = webPrincipal(request);
    const tool = await createTool(svc, p, parseInput(createToolSchema, request.body), actorOf(p, request.ip, 'ui'));
    return reply.status(201).send(ok({ tool }));
  });

  app.patch('/tools/:name', { schema }, async (request) => {
    const p = webPrincipal(request);
    const { name } = parseInput(nameParams, request.params);
    return ok({ tool: await updateTool(svc, p, name, parseInput(updateToolSchema, request.body), actorOf(p, request.ip, 'ui')) });
  });

  app.delete('/tools/:name', { schema }, async (request) => {
    const p = webPrincipal(request);
    const { name } = parseInput(nameParams, request.params);
    return ok({ deleted: true, tool: await deleteTool(svc, p, name, actorOf(p, request.ip, 'ui')) });
  });

  // The editor's "Try it" on the unsaved definition (src/tools/tool-try.ts). Registered before
  // /tools/:name/run's siblings; `try` cannot be a tool's name route as it has no /run.
  app.post('/tools/try', { schema, config: { countsAgainstPlan: true } }, async (request, reply) =>
    ok(await tryToolDraft(svc, webPrincipal(request), request.body, { source: 'ui', controller: clientGoneController(request, reply) })),
  );

  app.post('/tools/:name/run', { schema, config: { countsAgainstPlan: true } }, async (request, reply) => {
    const p = webPrincipal(request);
    const { name } = parseInput(nameParams, request.params);
    const { params } = parseInput(runToolSchema, request.body);
    return ok(await runTool(svc, p, name, params, { source: 'ui', controller: clientGoneController(request, reply) }));
  });
}
