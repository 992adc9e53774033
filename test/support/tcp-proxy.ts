// A TCP proxy a test controls, between dbq and a real server (PostgreSQL, MySQL, Redis…), to
// make the network fail the way real ones do rather than the way a stopped server does.
// `blackhole()` is the silently dead network (a cable pulled, a firewall dropping packets, a
// peer that vanished): connections stay open, bytes sent are swallowed, nothing ever comes
// back and nothing is ever closed, so only the client's own timers end its waits. New
// connections are accepted and treated alike. `refuse()` is the server gone instead (crashed,
// its host up): every open connection is reset and nothing listens, so a connect is refused at
// once. `restore()` forwards again for connections made after it (a blackholed connection has
// lost bytes mid-protocol and stays dead).
import net from 'node:net';

export interface TcpProxy {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Whether the proxy accepts connections (false between refuse() and restore()). */
  readonly listening: boolean;
  /** Stop forwarding on every connection, open or new; close none. */
  blackhole(): void;
  /** Reset every open connection (RST, not FIN: a crash, not a goodbye) and stop listening;
   * resolves once a connect would be refused. */
  refuse(): Promise<void>;
  /** Forward again, for connections made from now on (listening again on the same port after
   * refuse(): see `listening`). */
  restore(): void;
  /** Close every connection and stop listening. */
  close(): Promise<void>;
}

interface Link {
  client: net.Socket;
  upstream: net.Socket | null;
  dead: boolean;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const links = new Set<Link>();
  let holding = false;
  let accepted = 0;

  // Swallowing, not pausing: a paused socket lets the kernel's buffers fill and the sender
  // block, which a dead network does not do for the first megabytes.
  const kill = (link: Link) => {
    if (link.dead) return;
    link.dead = true;
    link.client.unpipe();
    link.upstream?.unpipe();
    link.client.removeAllListeners('data');
    link.upstream?.removeAllListeners('data');
    link.client.on('data', () => {});
    link.upstream?.on('data', () => {});
  };

  const server = net.createServer((client) => {
    accepted++;
    const link: Link = { client, upstream: null, dead: false };
    links.add(link);
    client.on('error', () => {});
    client.on('close', () => {
      link.upstream?.destroy();
      links.delete(link);
    });
    if (holding) {
      kill(link);
      return;
    }
    const upstream = net.connect(target.port, target.host);
    link.upstream = upstream;
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => {
      // A real network that is merely dead never closes; a server that closed does.
      if (!link.dead) client.destroy();
    });
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  // Listening again after refuse() may fail (the port taken meanwhile); an unlistened 'error'
  // would kill the test process, and `listening` stays false for the caller to see.
  server.on('error', () => {});

  return {
    host: '127.0.0.1',
    port,
    get accepted() {
      return accepted;
    },
    get listening() {
      return server.listening;
    },
    blackhole() {
      holding = true;
      for (const link of links) kill(link);
    },
    async refuse() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const link of links) {
        link.client.resetAndDestroy();
        link.upstream?.destroy();
      }
      links.clear();
      await closed;
    },
    restore() {
      holding = false;
      if (!server.listening) server.listen(port, '127.0.0.1');
    },
    async close() {
      for (const link of links) {
        link.client.destroy();
        link.upstream?.destroy();
      }
      links.clear();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
