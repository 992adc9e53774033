// A connection's SSH bastion: one SSH connection per engine, opened on the
// first query, shared by every pooled session as a forwarded channel (direct-tcpip), ended with
// the engine. No local port is listened on: a listener on 127.0.0.1 would hand the database to
// every local user for as long as the tunnel lives, so the drivers get a stream instead.
//
// The bastion's host key is pinned by its SHA-256 fingerprint; any other key ends the handshake
// before authentication (no trust-on-first-use: an attacker in the path would otherwise get the
// private key's signature and every byte of the session). A dropped SSH connection (the server
// restarted, the network went away) is forgotten; the next session opens a new one.
import { Duplex } from 'node:stream';
import type { Client, ClientChannel, ConnectConfig } from 'ssh2';
import { lazy } from '../../lazy.ts';
import { ConnectionFailedError } from '../../errors.ts';
import { connectionReason } from '../connection-reason.ts';
import { fingerprintOf } from './ssh-host-key.ts';

export interface SshSettings {
  host: string;
  port: number;
  user: string;
  /** OpenSSH/PEM private key text; secret. */
  privateKey: string | null;
  /** secret. */
  password: string | null;
  /** The pinned host key as `SHA256:<base64, no padding>`. */
  hostKey: string;
}

// Loaded on a tunnel's first connection: a server without bastions never loads ssh2.
const loadSsh2 = lazy(async () => (await import('ssh2')).default);

export class SshTunnel {
  private client: Client | null = null;
  private ready: Promise<Client> | null = null;
  private closed = false;

  constructor(
    private readonly settings: SshSettings,
    private readonly connectTimeoutMs: number,
  ) {}

  /** A stream to host:port as the bastion sees it, usable at once (writes wait for the
   * channel). pg calls connect() and waits for 'connect'; mysql2 just writes. */
  socket(host: string, port: number): Duplex {
    return new TunnelSocket(() => this.forward(host, port));
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = null;
    this.ready = null;
    if (!client) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2000);
      client.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      client.end();
    });
  }

  private async forward(host: string, port: number): Promise<ClientChannel> {
    const client = await this.connect();
    return new Promise((resolve, reject) => {
      client.forwardOut('127.0.0.1', 0, host, port, (err, channel) => {
        if (err) {
          reject(new ConnectionFailedError(`SSH tunnel to ${host}:${port}: ${err.message}`, err));
        } else resolve(channel);
      });
    });
  }

  private connect(): Promise<Client> {
    if (this.closed) return Promise.reject(new ConnectionFailedError('the connection was closed'));
    this.ready ??= loadSsh2().then((ssh2) => this.open(new ssh2.Client()));
    return this.ready;
  }

  private open(client: Client): Promise<Client> {
    if (this.closed) return Promise.reject(new ConnectionFailedError('the connection was closed'));
    const { host, port, user, privateKey, password, hostKey } = this.settings;
    let seen: string | null = null;
    // The promise connect() handed out for this client: forgotten with it, so the next session
    // dials again.
    const mine = this.ready;
    const forget = () => {
      if (this.client === client) this.client = null;
      if (this.ready === mine) this.ready = null;
    };
    const ready = new Promise<Client>((resolve, reject) => {
      client.once('ready', () => resolve(client));
      // Listened for good: an unlistened 'error' on an idle client would end the process.
      client.on('error', (err) => {
        forget();
        reject(
          seen && seen !== hostKey
            ? new ConnectionFailedError(`SSH host key of ${host}:${port} is ${seen}, not the pinned hostKey ${hostKey}; refused`, err)
            : new ConnectionFailedError(`SSH tunnel via ${host}:${port}: ${connectionReason(err)}`, err),
        );
      });
      client.on('close', () => {
        forget();
        reject(new ConnectionFailedError(`SSH tunnel via ${host}:${port}: the connection closed`));
      });
    });
    const config: ConnectConfig = {
      host,
      port,
      username: user,
      readyTimeout: this.connectTimeoutMs,
      keepaliveInterval: 15_000,
      keepaliveCountMax: 3,
      // No agent, no ~/.ssh: only what the record holds.
      agent: undefined,
      tryKeyboard: false,
      hostVerifier: (key: Buffer) => {
        seen = fingerprintOf(key);
        return seen === hostKey;
      },
    };
    if (privateKey) config.privateKey = privateKey;
    if (password) config.password = password;
    this.client = client;
    client.connect(config);
    return ready;
  }
}

/** A Duplex that stands in for the socket until the forwarded channel is open. */
class TunnelSocket extends Duplex {
  private channel: ClientChannel | null = null;
  private pending: Array<() => void> = [];
  private opening = false;

  constructor(private readonly open: () => Promise<ClientChannel>) {
    super();
    // mysql2 writes without calling connect().
    queueMicrotask(() => this.connect());
  }

  connect(): this {
    if (this.opening || this.destroyed) return this;
    this.opening = true;
    this.open().then(
      (channel) => {
        if (this.destroyed) {
          channel.destroy();
          return;
        }
        this.channel = channel;
        channel.on('data', (chunk: Buffer) => {
          if (!this.push(chunk)) channel.pause();
        });
        channel.on('end', () => this.push(null));
        channel.on('close', () => this.destroy());
        channel.on('error', (err: Error) => this.destroy(err));
        for (const run of this.pending.splice(0)) run();
        this.emit('connect');
      },
      (err: unknown) => this.destroy(err as Error),
    );
    return this;
  }

  override _read(): void {
    this.channel?.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.channel) this.channel.write(chunk, cb);
    else this.pending.push(() => this.channel!.write(chunk, cb));
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (this.channel) {
      this.channel.end();
      cb();
    } else this.pending.push(() => (this.channel!.end(), cb()));
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.channel?.destroy();
    cb(err);
  }

  // net.Socket methods the drivers call.
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  setTimeout(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
}
