// {workspace_url}/ui/api/connections: the connections page and the console's picker. Same
// rules as the API: everyone lists and tests stored connections; only admins create, edit,
// delete or test an unsaved config. Records never carry a password.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { createConnectionSchema, deleteConnection, updateConnectionSchema } from '../../connections/connections.ts';
import { addConnection, changeConnection } from '../../connections/save-connection.ts';
import { testConnection, testConnectionSchema } from '../../connections/test-connection.ts';
import { requireAdmin } from '../../http-kit/auth.ts';
import { ok, parseInput } from '../../http-kit/schema.ts';
import type { Services } from '../../services.ts';
import { webPrincipal } from '../web-context.ts';
import { getConnectionFor, getGrants, listConnectionsFor, setGrants } from '../../access/grants.ts';
import { grantsInputSchema } from '../../access/grants-input.ts';
import { actorOf } from '../../audit/audit.ts';
import { getAnnotations, putAnnotations } from '../../annotations/annotations.ts';

const idParams = z.object({ id: z.string().min(1).max(200) });
// Completion needs names, not a data dictionary: a huge catalogue is cut here.
const MAX_SCHEMA_TABLES = 2000;

export function connectionsApiRoutes(app: FastifyInstance, svc: Services): void {
  const schema = { hide: true };
  // Dialling a database counts against the plan, as the console's queries do.
  const config = { countsAgainstPlan: true };

  app.get('/connections', { schema }, async (request) => {
    const p = webPrincipal(request);
    return ok({ connections: await listConnectionsFor(svc, p) });
  });

  app.post('/connections', { schema }, async (request, reply) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    const connection = await addConnection(
      svc,
      p.workspace.id,
      parseInput(createConnectionSchema, request.body),
      actorOf(p, request.ip, 'ui'),
    );
    return reply.status(201).send(ok({ connection }));
  });

  app.patch('/connections/:id', { schema }, async (request) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    const { id } = parseInput(idParams, request.params);
    const connection = await changeConnection(
      svc,
      p.workspace.id,
      id,
      parseInput(updateConnectionSchema, request.body),
      actorOf(p, request.ip, 'ui'),
    );
    return ok({ connection });
  });

  app.delete('/connections/:id', { schema }, async (request) => {
    const p = webPrincipal(request);
    requireAdmin(p);
    const { id } = parseInput(idParams, request.params);
    const connection = await deleteConnection(svc.db, p.workspace.id, id, actorOf(p, request.ip, 'ui'));
    await svc.pools.drop(connection.id);
    return ok({ deleted: true, connection });
  });

  app.post('/connections/test', { schema, config }, async (request) => {
    const p = webPrincipal(request);
    return ok(await testConnection(svc, p, parseInput(testConnectionSchema, request.body)));
  });

  app.get('/connections/:id/schema', { schema, config }, async (request) => {
    const p = webPrincipal(request);
    const { id } = parseInput(idParams, request.params);
    const row = await getConnectionFor(svc, p, id);
    const tables = await svc.pools.forRead(row).listTables();
    return ok({
      tables: tables.slice(0, MAX_SCHEMA_TABLES).map((t) => ({
        schema: t.schema,
        name: t.name,
        kind: t.kind,
        // The database's own comments: the annotations editor shows them where no annotation replaces them.
        ...(t.description ? { comment: t.description } : {}),
        columns: t.columns.map((c) => ({ name: c.name, type: c.type, ...(c.description ? { comment: c.description } : {}) })),
      })),
      truncated: tables.length > MAX_SCHEMA_TABLES,
    });
  });

  // The annotations editor beside the schema browser: same core as GET|PUT /connections/{id}/annotations.
  app.get('/connections/:id/annotations', { schema }, async (request) => {
    const { id } = parseInput(idParams, request.params);
    return ok(await getAnnotations(svc, webPrincipal(request), id));
  });

  app.put('/connections/:id/annotations', { schema, config }, async (request) => {
    const p = webPrincipal(request);
    const { id } = parseInput(idParams, request.params);
    return ok(await putAnnotations(svc, p, id, request.body, actorOf(p, request.ip, 'ui')));
  });

  // The Access control of the connections page (admins): same core as GET|PUT /connections/{id}/grants.
  app.get('/connections/:id/grants', { schema }, async (request) => {
    const { id } = parseInput(idParams, request.params);
    return ok(await getGrants(svc, webPrincipal(request), id));
  });

  app.put('/connections/:id/grants', { schema }, async (request) => {
    const p = webPrincipal(request);
    const { id } = parseInput(idParams, request.params);
    return ok(await setGrants(svc, p, id, parseInput(grantsInputSchema, request.body), actorOf(p, request.ip, 'ui')));
  });
}
