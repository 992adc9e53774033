import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { createConnectionSchema, deleteConnection, updateConnectionSchema } from '../../connections/connections.ts';
import { addConnection, changeConnection } from '../../connections/save-connection.ts';
import { testConnection, testConnectionSchema } from '../../connections/test-connection.ts';
import type { Services } from '../../services.ts';
import { principalOf, requireConnectionAdmin, requireUnscopedAdmin } from '../../http-kit/auth.ts';
import { connectionRecordSchema, jsonSchema, ok, parseInput, readAccessSchema, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';
import { listConnectionsFor } from '../../access/grants.ts';
import { actorOf } from '../../audit/audit.ts';

const idParams = z.object({ id: z.string().min(1).max(200) });
const testResultSchema = z.object({
  ok: z.boolean(),
  latencyMs: z.number(),
  serverVersion: z.string().optional(),
  error: z.string().optional(),
  readAccess: readAccessSchema.nullable(),
});

export function connectionRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  const tags = ['connections'];

  app.get(
    '/connections',
    {
      schema: {
        hide,
        tags,
        summary: 'List the workspace connections, sorted by name',
        response: responses(z.object({ connections: z.array(connectionRecordSchema) })),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return ok({ connections: await listConnectionsFor(svc, principal) });
    },
  );

  app.post(
    '/connections',
    {
      schema: {
        hide,
        tags,
        summary: 'Create a connection (admin); `createReader` makes a login that can only read and uses it for every read',
        body: jsonSchema(createConnectionSchema),
        response: responses(z.object({ connection: connectionRecordSchema }), 201, [400, 401, 403, 409, 429, 500, 502]),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      requireUnscopedAdmin(principal);
      const connection = await addConnection(
        svc,
        principal.workspace.id,
        parseInput(createConnectionSchema, request.body),
        actorOf(principal, request.ip, 'api'),
      );
      return reply.status(201).send(ok({ connection }));
    },
  );

  app.post(
    '/connections/test',
    {
      schema: {
        hide,
        tags,
        summary:
          'Test a stored connection (any key) or an ad-hoc config (admin), and audit what the credential reads use can do; bounded in time',
        body: jsonSchema(testConnectionSchema),
        response: responses(testResultSchema),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return ok(await testConnection(svc, principal, parseInput(testConnectionSchema, request.body)));
    },
  );

  app.patch(
    '/connections/:id',
    {
      schema: {
        hide,
        tags,
        summary: 'Change a connection (admin)',
        params: jsonSchema(idParams),
        body: jsonSchema(updateConnectionSchema),
        response: responses(z.object({ connection: connectionRecordSchema }), 200, [400, 401, 403, 404, 409, 429, 500, 502]),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { id } = parseInput(idParams, request.params);
      await requireConnectionAdmin(svc, principal, id);
      const connection = await changeConnection(
        svc,
        principal.workspace.id,
        id,
        parseInput(updateConnectionSchema, request.body),
        actorOf(principal, request.ip, 'api'),
      );
      return ok({ connection });
    },
  );

  app.delete(
    '/connections/:id',
    {
      schema: {
        hide,
        tags,
        summary: 'Delete a connection and close its pool (admin)',
        params: jsonSchema(idParams),
        response: responses(z.object({ deleted: z.boolean(), connection: connectionRecordSchema })),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { id } = parseInput(idParams, request.params);
      await requireConnectionAdmin(svc, principal, id);
      const connection = await deleteConnection(svc.db, principal.workspace.id, id, actorOf(principal, request.ip, 'api'));
      await svc.pools.drop(connection.id);
      return ok({ deleted: true, connection });
    },
  );
}
