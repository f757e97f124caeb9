/*
 * Where the engine may pull a tenant's image from. The engine pulls from the host's own
 * network: a registry on its loopback, the cloud's metadata address (169.254.169.254) or a
 * private range would be reached on the tenant's behalf. A registry whose host is, or
 * resolves to, such an address is refused unless the operator names it (`REGISTRY`, or
 * `REGISTRY_ALLOW`).
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 127],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** Whether an address is of this host or a private, link-local, shared or reserved range (IPv4-mapped IPv6 read as IPv4). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return blocked.check(mapped, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The registry host (with its port, lowercase) an image reference pulls from; `docker.io` when it names none. */
export function registryOf(reference: string): string {
  const slash = reference.indexOf('/');
  if (slash < 0) return 'docker.io';
  const first = reference.slice(0, slash);
  // The engine reads the first component as a registry when it has a dot or a port, or is localhost.
  if (first.includes('.') || first.includes(':') || first === 'localhost' || first.startsWith('[')) return first.toLowerCase();
  return 'docker.io';
}

/** The host part of `host[:port]` (brackets of an IPv6 address removed). */
function hostOf(registry: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(registry);
  if (bracketed !== null) return bracketed[1] as string;
  const colon = registry.lastIndexOf(':');
  return colon > 0 && /^\d+$/.test(registry.slice(colon + 1)) ? registry.slice(0, colon) : registry;
}

/** A pull refused before the engine makes it. */
export class RefusedRegistry extends Error {}

/** Resolves a host name to its addresses; a port for tests. */
export type Resolve = (host: string) => Promise<string[]>;

const resolveWithDns: Resolve = async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Refuses a reference whose registry is this host's or a private network's, unless the
 * registry is one of `allowed` (`host[:port]`, as `REGISTRY` names it; a name without a port
 * allows every port). A host name that does not resolve is left to the engine, which fails
 * the pull the same way.
 * @throws RefusedRegistry naming the registry.
 */
export async function assertPublicRegistry(reference: string, allowed: readonly string[], resolve: Resolve = resolveWithDns): Promise<void> {
  const registry = registryOf(reference);
  const host = hostOf(registry);
  const allowedHere = allowed.map((entry) => entry.trim().toLowerCase().replace(/\/.*$/, '')).filter((entry) => entry !== '');
  if (allowedHere.includes(registry) || allowedHere.includes(host)) return;
  if (host === 'localhost' || host.endsWith('.localhost')) throw new RefusedRegistry(`pulls from ${registry} are refused: it is this host`);
  // Numeric forms other than the dotted quad (2130706433, 0x7f.1, 017700000001) are read as addresses by resolvers.
  if (isIP(host) === 0 && /^[0-9a-fx.]+$/i.test(host) && /^[0-9]/.test(host)) throw new RefusedRegistry(`pulls from ${registry} are refused: write a registry's address as a dotted quad or a name`);
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      return;
    }
  }
  const inside = addresses.find(isPrivateAddress);
  if (inside !== undefined) {
    throw new RefusedRegistry(`pulls from ${registry} are refused: it is on this host or a private network (${inside}); the operator may allow it with REGISTRY_ALLOW`);
  }
}
