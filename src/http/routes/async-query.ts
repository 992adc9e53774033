// Async queries and statements in flight: GET /query/running, GET /query/{queryId},
// POST /query/{queryId}/cancel. find-my-way prefers static segments, so GET /query/history
// and GET /query/running are never taken for a queryId. A query is its key's user's alone:
// anyone else (admins too) gets 404 `Query not found`. Each answers the same on every process
// sharing the store (src/query/async-queries.ts, shared-running.ts).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { cancelQuery, describeQuery, listRunning } from '../../query/async-queries.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { jsonSchema, ok, parseInput, queryResultSchema, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const paramsSchema = z.object({ queryId: z.string().min(1).max(100) });

const queryStateSchema = z.object({
  queryId: z.string(),
  status: z.enum(['running', 'succeeded', 'failed', 'canceled', 'timed_out']),
  connectionId: z.string(),
  submittedAt: z.string(),
  finishedAt: z.string().nullable(),
  error: z.object({ message: z.string(), code: z.string(), details: z.record(z.string(), z.unknown()).optional() }).nullable(),
  result: queryResultSchema.nullable(),
});

const runningSchema = z.object({
  queries: z.array(
    z.object({
      queryId: z.string(),
      connectionId: z.string(),
      connectionName: z.string(),
      sql: z.string(),
      source: z.string(),
      startedAt: z.string(),
      user: z.object({ id: z.string() }),
    }),
  ),
});

const JSON_TYPE = 'application/json; charset=utf-8';

export function asyncQueryRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  app.get(
    '/query/running',
    {
      schema: {
        hide,
        tags: ['query'],
        summary: "Statements running in any server process of the deployment (readers: their own; admins: the workspace's)",
        response: responses(runningSchema),
      },
    },
    async (request) => ok({ queries: await listRunning(svc, principalOf(request)) }),
  );

  app.get(
    '/query/:queryId',
    {
      schema: {
        hide,
        tags: ['query'],
        summary: 'State of an async query, with its result or error once done',
        params: jsonSchema(paramsSchema),
        response: responses(queryStateSchema),
      },
    },
    async (request, reply) => {
      const { queryId } = parseInput(paramsSchema, request.params);
      // The stored result is JSON text already: sent as is, not parsed and serialised again.
      return reply.type(JSON_TYPE).send(await describeQuery(svc, principalOf(request), queryId));
    },
  );

  app.post(
    '/query/:queryId/cancel',
    {
      schema: {
        hide,
        tags: ['query'],
        summary: 'Cancel your own running query on the database server',
        params: jsonSchema(paramsSchema),
        response: responses(queryStateSchema),
      },
    },
    async (request, reply) => {
      const { queryId } = parseInput(paramsSchema, request.params);
      return reply.type(JSON_TYPE).send(await cancelQuery(svc, principalOf(request), queryId));
    },
  );
}
