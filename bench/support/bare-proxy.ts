// The baseline server of bench/query-overhead: Fastify + a pg pool, nothing else — no auth,
// no guard, no read-only transaction, no history. Run as a child process:
//   node --import tsx bench/support/bare-proxy.ts <port> <pg-url> <pool-size>
import Fastify from 'fastify';
import pg from 'pg';

const [port, url, size] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: Number(size) });
pool.on('error', () => {});
const app = Fastify();
app.post('/query', async (request) => {
  const { sql, params } = request.body as { sql: string; params?: unknown[] };
  const result = await pool.query({ text: sql, values: params ?? [], rowMode: 'array' });
  return { success: true, data: { columns: result.fields.map((f) => ({ name: f.name })), rows: result.rows, rowCount: result.rowCount } };
});
await app.listen({ port: Number(port), host: '127.0.0.1' });
process.send?.('ready');
