// POST /query/export: the /query body plus `format`, streamed (src/query/export.ts). The
// generator is piped into the socket by Fastify (Readable → res with backpressure); the
// headers go out with its first chunk, so a failure before that is an ordinary envelope.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { exportInputSchema, openExport } from '../../query/export.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { clientGoneSignal } from '../../http-kit/client-gone.ts';
import { jsonSchema, parseInput, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const streamed = {
  description:
    'The rows, streamed: NDJSON (a `{"columns":[…]}` line, then one JSON array per row), CSV (RFC 4180, header row; cells a spreadsheet would run as a formula get a leading \' unless `csvFormulaGuard` is false) or JSON (`{"columns":[…],"rows":[…]}`)',
  content: {
    'application/x-ndjson': { schema: { type: 'string' } },
    'text/csv': { schema: { type: 'string' } },
    'application/json': { schema: { type: 'object' } },
  },
};

export function exportRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  app.post(
    '/query/export',
    {
      schema: {
        hide,
        tags: ['query'],
        summary: 'Stream the whole result of one statement as NDJSON, CSV or JSON',
        body: jsonSchema(exportInputSchema),
        response: { ...responses(z.object({}), 200, [400, 401, 403, 404, 413, 422, 429, 500, 502, 503, 504, 507]), 200: streamed },
      },
    },
    async (request, reply) => {
      const input = parseInput(exportInputSchema, request.body);
      const opened = await openExport(svc, principalOf(request), input, { source: 'api', signal: clientGoneSignal(request, reply) });
      void reply
        .type(opened.contentType)
        .header('content-disposition', `attachment; filename="${opened.fileName}"`)
        .header('x-query-id', opened.queryId)
        .header('cache-control', 'no-store');
      return reply.send(Readable.from(opened.chunks, { objectMode: false }));
    },
  );
}
