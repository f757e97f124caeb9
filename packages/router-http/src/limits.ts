import type { Socket } from 'node:net';

/**
 * Counts the open client connections of each address and refuses those beyond the limit,
 * so that one client (a slowloris, a flood of idle connections) cannot take all of them.
 * IPv4 addresses count the same whether or not they come IPv6-mapped.
 */
export class ConnectionLimiter {
  private readonly open = new Map<string, number>();

  constructor(private readonly perAddress: number) {}

  /** Counts the socket until it closes and returns true, or returns false when its address has too many open. */
  admit(socket: Socket): boolean {
    const address = normalized(socket.remoteAddress ?? '');
    const count = this.open.get(address) ?? 0;
    if (count >= this.perAddress) return false;
    this.open.set(address, count + 1);
    socket.once('close', () => {
      const left = (this.open.get(address) ?? 1) - 1;
      if (left <= 0) this.open.delete(address);
      else this.open.set(address, left);
    });
    return true;
  }

  /** Open connections of an address. */
  count(address: string): number {
    return this.open.get(normalized(address)) ?? 0;
  }
}

/** A client's address without the IPv6 mapping of an IPv4 address (`::ffff:10.0.0.1` is `10.0.0.1`). */
export function normalized(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice('::ffff:'.length) : address;
}
