/**
 * How many connections one server of the platform (a route class: the API, the git server)
 * takes, from all clients and from one.
 */
export interface ConnectionCaps {
  /** Open connections in all. */
  maxConnections: number;
  /** Open connections from one client (one IPv4 address, one IPv6 /64). */
  maxConnectionsPerAddress: number;
  /**
   * The last places of the total, kept for clients that hold no connection yet: once
   * `maxConnections - reservedConnections` are open, only a client with none open gets one.
   * Clients that fill the rest at their per-address cap cannot take these, so a few dozen
   * addresses cannot take the server from everyone: that needs one address per reserved place.
   */
  reservedConnections: number;
}

/** Why a connection is refused: its client holds its cap (`address`), or the server is full for it (`total`). */
export type ConnectionRefusal = 'address' | 'total';

/**
 * Whether a new connection from a client that holds `fromClient` connections is refused
 * while the server holds `open` in all; null when it is admitted.
 */
export function connectionRefusal(caps: ConnectionCaps, open: number, fromClient: number): ConnectionRefusal | null {
  if (fromClient >= caps.maxConnectionsPerAddress) return 'address';
  if (open >= caps.maxConnections) return 'total';
  if (fromClient > 0 && open >= caps.maxConnections - caps.reservedConnections) return 'total';
  return null;
}

/**
 * The client a peer address counts as: an IPv4 address as itself (also when it comes
 * IPv6-mapped, `::ffff:10.0.0.1`), an IPv6 address as its /64, which one host or one
 * customer usually holds whole (`2001:db8:0:1::/64`).
 */
export function clientOf(address: string): string {
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice('::ffff:'.length);
  if (!address.includes(':')) return address;
  const groups = ipv6Groups(address);
  return groups === null ? address : `${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, lower-case without leading zeros; null when it is not one. */
function ipv6Groups(address: string): string[] | null {
  const zone = address.indexOf('%');
  let text = (zone === -1 ? address : address.slice(0, zone)).toLowerCase();
  // An IPv4 tail (`::1.2.3.4`) is two groups.
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const octets = tail.split('.').map(Number);
    if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255)) return null;
    const [a = 0, b = 0, c = 0, d = 0] = octets;
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const split = (part: string | undefined): string[] => (part === undefined || part === '' ? [] : part.split(':'));
  const head = split(halves[0]);
  const rest = split(halves[1]);
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<string>(halves.length === 1 ? 0 : missing).fill('0'), ...rest];
  if (groups.some((group) => !/^[0-9a-f]{1,4}$/.test(group))) return null;
  return groups.map((group) => parseInt(group, 16).toString(16));
}

/**
 * The open connections of one server, in all and per client, admitting or refusing each new
 * one by `connectionRefusal`. What the API server and the git server share; each calls
 * `admit` when a connection arrives and the returned `release` once when it closes.
 */
export class ConnectionLedger {
  private readonly byClient = new Map<string, number>();
  private total = 0;

  constructor(private readonly caps: ConnectionCaps) {}

  /** Counts a connection from `address` and returns how to release it, or returns why it is refused. */
  admit(address: string): { release: () => void } | { refused: ConnectionRefusal } {
    const client = clientOf(address);
    const mine = this.byClient.get(client) ?? 0;
    const refused = connectionRefusal(this.caps, this.total, mine);
    if (refused !== null) return { refused };
    this.total += 1;
    this.byClient.set(client, mine + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.total -= 1;
        const left = (this.byClient.get(client) ?? 1) - 1;
        if (left > 0) this.byClient.set(client, left);
        else this.byClient.delete(client);
      },
    };
  }

  /** Connections open now, in all. */
  get open(): number {
    return this.total;
  }

  /** Connections open now from the client `address` counts as. */
  openFrom(address: string): number {
    return this.byClient.get(clientOf(address)) ?? 0;
  }
}
