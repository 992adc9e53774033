// API keys over the API: list (admins: the workspace's; others: their own), create (for
// yourself; admins also for another user), revoke, and GET /keys/self — what the presenting
// key may do. The role checks read the effective role: a readOnly key of an admin is not an
// admin here either. A key that creates a key hands out at most its own scope.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../audit/audit.ts';
import { keyScopeInputShape } from '../../access/scope.ts';
import { NotFoundError } from '../../errors.ts';
import type { Services } from '../../services.ts';
import { createApiKey, describeOwnKey, listApiKeys, revokeApiKey, type Principal } from '../../workspaces/api-keys.ts';
import { principalOf, requireAdmin } from '../../http-kit/auth.ts';
import { jsonSchema, ok, parseInput, responses } from '../../http-kit/schema.ts';
import type { RouteOptions } from './index.ts';

/** A key's scope in responses (OpenAPI); an OAuth grant's scope is the same shape. */
export const scopeSchema = z.object({
  readOnly: z.boolean().optional(),
  connections: z.array(z.string()).optional().describe('Connection ids'),
  toolsOnly: z.boolean().optional(),
  tools: z.array(z.string()).optional(),
});

const apiKeySchema = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  user: z.object({ id: z.string(), email: z.string() }),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  scope: scopeSchema.nullable().describe('What the key narrows; null: all of its user'),
  expiresAt: z.string().nullable(),
  expiresSoon: z.boolean().describe('Expires within 14 days'),
  expired: z.boolean(),
});

const createKeySchema = z
  .object({
    name: z.string().min(1).max(100),
    user: z.string().min(1).max(320).optional().describe("Email of the key's user; another user than yourself needs an admin key"),
    ...keyScopeInputShape,
    expiresAt: z.string().max(100).optional().describe("ISO 8601; at most the workspace's maxKeyDays ahead"),
    expiresInDays: z.number().int().min(1).max(3650).optional(),
  })
  .strict();

const selfSchema = z.object({
  apiKey: z.object({
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    scope: scopeSchema.nullable(),
    expiresAt: z.string().nullable(),
    user: z.object({ id: z.string(), email: z.string(), role: z.enum(['admin', 'read_only']).describe("The user's own role") }),
  }),
  effective: z
    .object({
      readOnly: z.boolean(),
      rawSql: z.boolean(),
      connections: z.array(z.string()).nullable(),
      tools: z.array(z.string()).nullable(),
    })
    .describe("The user's current role ∩ the key's scope: what requests with this key may do"),
});

const idParams = z.object({ id: z.string().min(1).max(200) });

/** Keys the caller may manage: all for an admin, else the caller's own. */
async function visibleKeys(svc: Services, p: Principal) {
  return listApiKeys(svc.db, p.workspace.slug, p.user.role === 'admin' ? undefined : p.user.id);
}

export function keyRoutes(app: FastifyInstance, svc: Services, { hide }: RouteOptions): void {
  const tags = ['keys'];

  app.get(
    '/keys',
    {
      schema: {
        hide,
        tags,
        summary: "List API keys, never their values (admins: the workspace's; others: their own)",
        response: responses(z.object({ apiKeys: z.array(apiKeySchema) })),
      },
    },
    async (request) => ok({ apiKeys: await visibleKeys(svc, principalOf(request)) }),
  );

  app.get(
    '/keys/self',
    {
      schema: {
        hide,
        tags,
        summary: 'The presenting key: its scope, expiry, user, and what it may effectively do',
        response: responses(selfSchema),
      },
    },
    async (request) => ok(await describeOwnKey(svc.db, principalOf(request))),
  );

  app.post(
    '/keys',
    {
      schema: {
        hide,
        tags,
        summary:
          'Create an API key, narrower than its user if asked (never wider, nor wider than the key that asks); the secret is in this response only',
        body: jsonSchema(createKeySchema),
        response: responses(z.object({ apiKey: apiKeySchema, secret: z.string() }), 201, [400, 401, 403, 404, 429, 500]),
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const input = parseInput(createKeySchema, request.body);
      const email = input.user ?? p.user.email;
      if (email.trim().toLowerCase() !== p.user.email) requireAdmin(p);
      const created = await createApiKey(
        svc.db,
        {
          workspace: p.workspace.slug,
          email,
          name: input.name,
          scope: { readOnly: input.readOnly, connections: input.connections, toolsOnly: input.toolsOnly, tools: input.tools },
          expiresAt: input.expiresAt,
          expiresInDays: input.expiresInDays,
        },
        actorOf(p, request.ip, 'api'),
        p.apiKey ? { scope: p.apiKey.scope, expiresAt: p.apiKey.expiresAt } : null,
      );
      void reply.header('cache-control', 'no-store');
      return reply.status(201).send(ok(created));
    },
  );

  app.post(
    '/keys/:id/revoke',
    {
      schema: {
        hide,
        tags,
        summary: 'Revoke a key (your own; admins: any): refused from its next request on',
        params: jsonSchema(idParams),
        response: responses(z.object({ apiKey: apiKeySchema })),
      },
    },
    async (request) => {
      const p = principalOf(request);
      const { id } = parseInput(idParams, request.params);
      // Someone else's key answers like a key that does not exist.
      if (!(await visibleKeys(svc, p)).some((k) => k.id === id)) throw new NotFoundError('API key not found');
      return ok({ apiKey: await revokeApiKey(svc.db, p.workspace.slug, id, actorOf(p, request.ip, 'api')) });
    },
  );
}
