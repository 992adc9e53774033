import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { generateInputSchema, runGenerate } from '../../ai/run-generate.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { clientGoneSignal } from '../../http-kit/client-gone.ts';
import { jsonSchema, ok, parseInput, queryResultSchema, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const generateResultSchema = z.object({
  sql: z.string(),
  explanation: z.string(),
  dialect: z.enum(['postgres', 'mysql', 'sqlite']),
  provider: z.enum(['builtin', 'openai', 'anthropic']),
  model: z.string().nullable(),
  tables: z.array(z.string()),
  tablesOffered: z
    .array(z.string())
    .nullable()
    .describe('The tables an LLM provider was shown (a large schema is cut to those the question needs); null for the builtin'),
  validated: z.boolean(),
  attempts: z.number(),
  result: queryResultSchema.nullable(),
});

export function aiRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  app.post(
    '/ai/generate',
    {
      schema: {
        hide,
        tags: ['ai'],
        summary: 'Turn a plain-language question into SQL for a connection (validated on the database; execute:true runs it)',
        body: jsonSchema(generateInputSchema),
        response: responses(generateResultSchema, 200, [400, 401, 403, 404, 422, 429, 500, 502, 504, 507]),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const input = parseInput(generateInputSchema, request.body);
      return ok(await runGenerate(svc, principal, input, { source: 'api', signal: clientGoneSignal(request, reply) }));
    },
  );
}
