// A connection's business context over REST: anyone who may use the connection reads it,
// admins replace it (each PUT a new version, audited). Handlers only parse and call
// src/annotations/annotations.ts, which the web app and the CLI share.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import { annotationsSchema, getAnnotations, putAnnotations } from '../../annotations/annotations.ts';
import { queryInteger } from '../../history/history.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { jsonSchema, ok, parseInput, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const idParams = z.object({ id: z.string().min(1).max(200) });
const versionQuery = z.object({ version: queryInteger(1, 2 ** 31 - 1).optional() }).strict();
const recordSchema = annotationsSchema.extend({
  connectionId: z.string(),
  version: z.number().describe('Each PUT makes the next version; 0 while there is none'),
  updatedAt: z.string().nullable(),
  updatedBy: z.string().nullable().describe('User id of the admin who saved this version; null from the CLI'),
});

export function annotationRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  const tags = ['connections'];

  app.get(
    '/connections/:id/annotations',
    {
      schema: {
        hide,
        tags,
        summary:
          "The connection's annotations: table and column descriptions and synonyms, example questions with their SQL (newest version, or ?version=n); any key that may use the connection",
        params: jsonSchema(idParams),
        querystring: jsonSchema(versionQuery),
        response: responses(recordSchema),
      },
    },
    async (request) => {
      const { id } = parseInput(idParams, request.params);
      const { version } = parseInput(versionQuery, request.query);
      return ok(await getAnnotations(svc, principalOf(request), id, version));
    },
  );

  app.put(
    '/connections/:id/annotations',
    {
      schema: {
        hide,
        tags,
        summary:
          "Replace the connection's annotations (admin) as the next version. Every table and column named must exist; every example's SQL must be a read the connection's guard accepts (400 naming the example)",
        params: jsonSchema(idParams),
        body: jsonSchema(annotationsSchema),
        response: responses(recordSchema, 200, [400, 401, 403, 404, 409, 429, 500]),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { id } = parseInput(idParams, request.params);
      return ok(await putAnnotations(svc, principal, id, request.body, actorOf(principal, request.ip, 'api')));
    },
  );
}
