import { createServer } from 'node:net';

/** A range of TCP ports, both ends included. */
export interface PortRange {
  from: number;
  to: number;
}

/** Whether nothing listens on the port on any address: binding it as an application would succeeds. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * Hands out ports of a range to processes: never one that another process of this scheduler
 * holds, and only one that can be bound right now. Goes round the range so that a port just
 * given back is not reused at once.
 */
export class PortAllocator {
  private readonly taken = new Set<number>();
  private next: number;

  constructor(private readonly range: PortRange) {
    if (!Number.isInteger(range.from) || !Number.isInteger(range.to) || range.from < 1 || range.to > 65535 || range.from > range.to) {
      throw new Error(`invalid port range ${range.from}-${range.to}`);
    }
    // Start at a random point: two schedulers on one machine (two controllers, parallel test
    // runs) then rarely probe the same ports at the same moment.
    this.next = range.from + Math.floor(Math.random() * (range.to - range.from + 1));
  }

  /** A free port, now reserved. @throws Error when every port of the range is taken. */
  async allocate(): Promise<number> {
    const size = this.range.to - this.range.from + 1;
    for (let tried = 0; tried < size; tried++) {
      const port = this.next;
      this.next = port >= this.range.to ? this.range.from : port + 1;
      if (this.taken.has(port)) continue;
      // Reserve before the asynchronous check, so a concurrent allocation skips it.
      this.taken.add(port);
      if (await portIsFree(port)) return port;
      this.taken.delete(port);
    }
    throw new Error(`no free port left in ${this.range.from}-${this.range.to}`);
  }

  /** Gives a port back. */
  release(port: number): void {
    this.taken.delete(port);
  }
}
