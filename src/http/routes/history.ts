import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { historyQuerySchema, listHistory } from '../../history/history.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { historyEntrySchema, jsonSchema, ok, parseInput, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

export function historyRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  app.get(
    '/query/history',
    {
      schema: {
        hide,
        tags: ['history'],
        summary: 'Query history, newest first, keyset-paged (readers see their own entries)',
        querystring: jsonSchema(historyQuerySchema),
        response: responses(z.object({ entries: z.array(historyEntrySchema), nextCursor: z.string().nullable() })),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return ok(await listHistory(svc.db, principal, parseInput(historyQuerySchema, request.query), { reader: svc.historyReader }));
    },
  );
}
