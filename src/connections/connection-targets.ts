// DBQ_CONNECTION_TARGETS: the hosts and networks connections and connection tests may dial.
// A connection test tells a closed port from an open one and from one speaking another
// protocol, so an admin key (or a stolen one) can map whatever the server can reach. With the
// setting, a host is resolved and every address it resolves to must be listed (a name listed
// as such is allowed by that name); anything else, a name that does not resolve and a look-up
// that does not answer in time included, is one and the same 403 before anything is dialled,
// so the answer says nothing about what listens there. Checked when a connection is created,
// changed or tested, and again each time an engine opens (services.ts), where the checked
// address is the one dialled: a second look-up by the driver could answer differently (DNS
// rebinding). Over TLS the driver needs the name to verify the certificate, so the name is
// dialled; the certificate then pins the server, not the address.
import dns from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { EngineConfig } from '../engines/engine.ts';
import { InsufficientPermissionsError } from '../errors.ts';

export interface ConnectionTargets {
  /** Listed addresses and networks. */
  readonly blocks: BlockList;
  /** Listed host names (lower case, no trailing dot). */
  readonly names: ReadonlySet<string>;
  /** A look-up that takes longer is refused like any other host outside the list. */
  readonly lookupTimeoutMs: number;
}

/** Resolves a host name to every address it has. */
export type HostLookup = (host: string) => Promise<string[]>;

const systemLookup: HostLookup = async (host) => (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** null: the setting is unset and any host may be dialled. */
export function parseConnectionTargets(entries: readonly string[] | null, opts: { lookupTimeoutMs: number }): ConnectionTargets | null {
  if (entries === null) return null;
  const blocks = new BlockList();
  const names = new Set<string>();
  for (const entry of entries) {
    const [addr, bits] = entry.split('/');
    const family = isIP(addr);
    if (family === 0) names.add(normalName(entry));
    else if (bits !== undefined) blocks.addSubnet(addr, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
    else blocks.addAddress(addr, family === 4 ? 'ipv4' : 'ipv6');
  }
  return { blocks, names, lookupTimeoutMs: opts.lookupTimeoutMs };
}

function normalName(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}

function refusal(): InsufficientPermissionsError {
  return new InsufficientPermissionsError({
    reason: 'host is not among the connection targets this server allows (DBQ_CONNECTION_TARGETS)',
    field: 'host',
  });
}

/** An IPv4 address written as IPv6 (::ffff:10.0.0.1) is checked as the IPv4 address it is. */
function listed(blocks: BlockList, address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return blocks.check(mapped[1], 'ipv4');
  const family = isIP(address);
  return family !== 0 && blocks.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

async function resolve(targets: ConnectionTargets, host: string, lookup: HostLookup): Promise<string[]> {
  if (isIP(host) !== 0) return [host];
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(refusal()), targets.lookupTimeoutMs);
  });
  try {
    return await Promise.race([lookup(host), deadline]);
  } catch {
    throw refusal();
  } finally {
    clearTimeout(timer);
  }
}

/** The addresses `host` resolves to, when the setting allows it; null when it is unset; a 403
 * that is the same for every host it refuses otherwise. */
export async function checkConnectionTarget(
  targets: ConnectionTargets | null,
  host: string,
  lookup: HostLookup = systemLookup,
): Promise<string[] | null> {
  if (targets === null) return null;
  const name = normalName(host.replace(/^\[(.*)\]$/, '$1'));
  const addresses = await resolve(targets, name, lookup);
  if (addresses.length === 0) throw refusal();
  if (targets.names.has(name)) return addresses;
  if (!addresses.every((address) => listed(targets.blocks, address))) throw refusal();
  return addresses;
}

/** The engine config to open with: the host checked, and replaced by the checked address
 * unless TLS needs the name. SQLite configs dial nothing. */
export async function pinConnectionTarget(
  targets: ConnectionTargets,
  config: EngineConfig,
  lookup: HostLookup = systemLookup,
): Promise<EngineConfig> {
  if (config.engine === 'sqlite') return config;
  if (config.ssh) {
    // dbq dials the bastion (pinned like a database host: the SSH host key is checked, not a
    // certificate name); the database, reached from the bastion, must be allowed too.
    await checkConnectionTarget(targets, config.host || 'localhost', lookup);
    const bastion = (await checkConnectionTarget(targets, config.ssh.host, lookup))!;
    return { ...config, ssh: { ...config.ssh, host: bastion[0]! } };
  }
  // The adapters dial localhost when no host is given.
  const addresses = (await checkConnectionTarget(targets, config.host || 'localhost', lookup))!;
  return config.ssl ? config : { ...config, host: addresses[0] };
}
