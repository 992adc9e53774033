// Setup file of the `sqlite` tier (test/tiers.ts): these tests run without PostgreSQL, MariaDB
// or Redis, so a connection to one of their ports from the test process fails at once with a
// message that names the tier, rather than passing on a machine where the service happens to
// run. Loopback servers the test starts itself and closed ports dialed on purpose stay allowed.
// Child processes (./bin/dbq) are not covered: their environment comes from the test.
import net from 'node:net';
import { SERVICE_PORTS } from '../tiers.ts';

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  // net.connect() passes its normalized [options, callback] array as the first argument.
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const port = Number(typeof first === 'object' && first !== null ? (first as { port?: unknown }).port : first);
  if (SERVICE_PORTS.includes(port)) {
    throw new Error(
      `sqlite tier: port ${port} (PostgreSQL, MariaDB or Redis) is not allowed here; move this file to the integration tier in test/tiers.ts`,
    );
  }
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;
