// Curated tools over REST: admins define them, anyone who may use the connection runs them.
// Handlers only parse and call src/tools/tools.ts, which the web app, the CLI and MCP share.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import {
  createTool,
  createToolSchema,
  deleteTool,
  getTool,
  listTools,
  runTool,
  runToolSchema,
  updateTool,
  updateToolSchema,
} from '../../tools/tools.ts';
import { parametersSchema } from '../../tools/tool-params.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { clientGoneController } from '../../http-kit/client-gone.ts';
import { jsonSchema, ok, parseInput, queryResultSchema, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const nameParams = z.object({ name: z.string().min(1).max(200) });

const toolRecordSchema = z.object({
  name: z.string(),
  version: z.number(),
  description: z.string(),
  connectionId: z.string(),
  parameters: parametersSchema,
  maxRows: z.number(),
  inputSchema: z.record(z.string(), z.unknown()).describe('JSON Schema of `params` (what MCP clients are shown)'),
  sql: z.string().optional().describe('Admins only'),
  createdAt: z.string().describe('When this version was made'),
  createdBy: z.string().nullable().describe('User id of the admin who made this version; null from the CLI'),
});
const toolBody = z.object({ tool: toolRecordSchema });
const toolRunSchema = queryResultSchema.extend({ tool: z.object({ name: z.string(), version: z.number() }) });

export function toolRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  const tags = ['tools'];

  app.get(
    '/tools',
    {
      schema: {
        hide,
        tags,
        summary: 'The curated tools the caller may run, sorted by name',
        response: responses(z.object({ tools: z.array(toolRecordSchema) })),
      },
    },
    async (request) => ok({ tools: await listTools(svc, principalOf(request)) }),
  );

  app.post(
    '/tools',
    {
      schema: {
        hide,
        tags,
        summary: 'Define a curated tool (admin): a named statement with typed :name parameters, version 1',
        body: jsonSchema(createToolSchema),
        response: responses(toolBody, 201, [400, 401, 403, 404, 409, 422, 429, 500]),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const tool = await createTool(svc, principal, parseInput(createToolSchema, request.body), actorOf(principal, request.ip, 'api'));
      return reply.status(201).send(ok({ tool }));
    },
  );

  app.get(
    '/tools/:name',
    {
      schema: {
        hide,
        tags,
        summary: 'One curated tool (its newest version)',
        params: jsonSchema(nameParams),
        response: responses(toolBody),
      },
    },
    async (request) => ok({ tool: await getTool(svc, principalOf(request), parseInput(nameParams, request.params).name) }),
  );

  app.patch(
    '/tools/:name',
    {
      schema: {
        hide,
        tags,
        summary: 'Change a curated tool (admin): makes the next version; unchanged fields are kept',
        params: jsonSchema(nameParams),
        body: jsonSchema(updateToolSchema),
        response: responses(toolBody, 200, [400, 401, 403, 404, 409, 422, 429, 500]),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { name } = parseInput(nameParams, request.params);
      return ok({
        tool: await updateTool(svc, principal, name, parseInput(updateToolSchema, request.body), actorOf(principal, request.ip, 'api')),
      });
    },
  );

  app.delete(
    '/tools/:name',
    {
      schema: {
        hide,
        tags,
        summary: 'Delete a curated tool (admin); its versions stay in history, a new tool of that name continues the numbering',
        params: jsonSchema(nameParams),
        response: responses(z.object({ deleted: z.boolean(), tool: toolRecordSchema })),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { name } = parseInput(nameParams, request.params);
      return ok({ deleted: true, tool: await deleteTool(svc, principal, name, actorOf(principal, request.ip, 'api')) });
    },
  );

  app.post(
    '/tools/:name/run',
    {
      schema: {
        hide,
        tags,
        summary: 'Run a curated tool with `params`; values are bound by the driver, caller.* values come from the key',
        params: jsonSchema(nameParams),
        body: jsonSchema(runToolSchema),
        response: responses(toolRunSchema, 200, [400, 401, 403, 404, 413, 422, 429, 500, 502, 503, 504, 507]),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { name } = parseInput(nameParams, request.params);
      const { params } = parseInput(runToolSchema, request.body);
      return ok(await runTool(svc, principal, name, params, { source: 'api', controller: clientGoneController(request, reply) }));
    },
  );
}
