import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX, searchObjects, searchObjectsFields } from '../../schema/search-objects.ts';
import { queryInteger } from '../../history/history.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { jsonSchema, ok, parseInput, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const idParams = z.object({ id: z.string().min(1).max(200) });
const objectsQuerySchema = z
  .object({ ...searchObjectsFields, limit: queryInteger(1, SEARCH_LIMIT_MAX).default(SEARCH_LIMIT_DEFAULT) })
  .strict();
const objectsResultSchema = z.object({
  connectionId: z.string(),
  connectionName: z.string(),
  total: z.number(),
  truncated: z.boolean(),
  objects: z.array(z.union([z.string(), z.looseObject({})])),
});

export function objectRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  app.get(
    '/connections/:id/objects',
    {
      schema: {
        hide,
        tags: ['connections'],
        summary:
          'Find tables, views, columns, indexes or functions by name (case-insensitive substring), ranked exact > prefix > substring; any key',
        params: jsonSchema(idParams),
        querystring: jsonSchema(objectsQuerySchema),
        response: responses(objectsResultSchema),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { id } = parseInput(idParams, request.params);
      return ok(await searchObjects(svc, principal, id, parseInput(objectsQuerySchema, request.query)));
    },
  );
}
