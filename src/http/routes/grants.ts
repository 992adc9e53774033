// GET|PUT /connections/{id}/grants (admin): who may use a connection — everyone (the default)
// or chosen users. Admins always may. Users left out find the connection absent everywhere.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import { getGrants, setGrants } from '../../access/grants.ts';
import { grantsInputSchema } from '../../access/grants-input.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../../http-kit/auth.ts';
import { jsonSchema, ok, parseInput, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

const idParams = z.object({ id: z.string().min(1).max(200) });

const grantsSchema = z.object({
  everyone: z.boolean(),
  users: z.array(z.object({ id: z.string(), email: z.string() })).optional(),
});

export function grantRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  const tags = ['connections'];

  app.get(
    '/connections/:id/grants',
    {
      schema: {
        hide,
        tags,
        summary: 'Who may use the connection (admin)',
        params: jsonSchema(idParams),
        response: responses(grantsSchema),
      },
    },
    async (request) => {
      const { id } = parseInput(idParams, request.params);
      return ok(await getGrants(svc, principalOf(request), id));
    },
  );

  app.put(
    '/connections/:id/grants',
    {
      schema: {
        hide,
        tags,
        summary: 'Set who may use the connection (admin): everyone, or the listed users',
        params: jsonSchema(idParams),
        body: jsonSchema(grantsInputSchema),
        response: responses(grantsSchema),
      },
    },
    async (request) => {
      const p = principalOf(request);
      const { id } = parseInput(idParams, request.params);
      return ok(await setGrants(svc, p, id, parseInput(grantsInputSchema, request.body), actorOf(p, request.ip, 'api')));
    },
  );
}
