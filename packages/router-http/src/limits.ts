import type { Socket } from 'node:net';
import { ConnectionLedger, type ConnectionCaps } from '@svc/core';

/**
 * Counts the open client connections of a router (all its listeners) and refuses new ones
 * by the core's rule (`connectionRefusal`): beyond the cap of one client (an IPv4 address,
 * an IPv6 /64), beyond the total, and, once only the reserved places are left, from any
 * client that already holds one. So one client (a slowloris, a flood of idle connections)
 * cannot take all of them, and a few dozen addresses at their cap cannot take the reserve:
 * that takes one address per reserved place.
 */
export class ConnectionLimiter {
  private readonly ledger: ConnectionLedger;

  constructor(caps: ConnectionCaps) {
    this.ledger = new ConnectionLedger(caps);
  }

  /** Counts the socket until it closes and returns true, or returns false when the rule refuses it. */
  admit(socket: Socket): boolean {
    const admitted = this.ledger.admit(socket.remoteAddress ?? '');
    if ('refused' in admitted) return false;
    socket.once('close', admitted.release);
    return true;
  }

  /** Open connections of the client an address counts as. */
  count(address: string): number {
    return this.ledger.openFrom(address);
  }

  /** Open connections in all. */
  get open(): number {
    return this.ledger.open;
  }
}

/** A client's address without the IPv6 mapping of an IPv4 address (`::ffff:10.0.0.1` is `10.0.0.1`). */
export function normalized(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice('::ffff:'.length) : address;
}
