// The streamed baseline of bench/export: Fastify + pg + pg-query-stream and nothing else — no
// auth, guard, history or value encoding. Rows go out as NDJSON (a header line, then one JSON
// array per row) through a Readable that Fastify pipes to the socket, so backpressure holds.
// It is the streamed counterpart of the bare server, for exports. Run as a child process:
//   node --import tsx bench/support/bare-stream.ts <port> <pg-url>
import { Readable } from 'node:stream';
import Fastify from 'fastify';
import pg from 'pg';
import QueryStream from 'pg-query-stream';

const [port, url] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: 2 });
pool.on('error', () => {});
const app = Fastify();
app.post('/export', async (request, reply) => {
  const { sql } = request.body as { sql: string };
  const client = await pool.connect();
  const rows = client.query(new QueryStream(sql, [], { rowMode: 'array', batchSize: 1000 }));
  let head = true;
  const body = Readable.from(
    (async function* () {
      try {
        for await (const row of rows) {
          if (head) {
            head = false;
            yield `${JSON.stringify({ columns: (rows as unknown as { cursor: { _result: { fields: { name: string }[] } } }).cursor._result.fields.map((f) => f.name) })}\n`;
          }
          yield `${JSON.stringify(row)}\n`;
        }
      } finally {
        client.release();
      }
    })(),
  );
  return reply.type('application/x-ndjson').send(body);
});
await app.listen({ port: Number(port), host: '127.0.0.1' });
process.send?.('ready');
