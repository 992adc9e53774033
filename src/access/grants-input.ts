// The body that sets a connection's grants, one schema for every door that takes it (the REST
// route and the web console's Access control), so both accept and refuse the same things.
import { z } from 'zod';

export const grantsInputSchema = z
  .object({
    everyone: z.boolean(),
    users: z.array(z.string().min(1).max(320)).max(1000).optional().describe('User ids or emails (with everyone: false)'),
  })
  .strict();
