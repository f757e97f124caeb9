import type { ResolvedRoute, RouteTable } from './ports';

/** Options of RouteCache. */
export interface RouteCacheOptions {
  /**
   * How often the routes of the host names in use are looked up again, in the background;
   * 0 for never (a cache fed by `apply`, as in a router worker). Default 1000 ms.
   */
  refreshMs?: number;
  /** A host name not asked for during this long is forgotten. Default 60 s. */
  forgetAfterMs?: number;
  /** Host names remembered at most; the first remembered are forgotten first. Default 100,000. */
  maxEntries?: number;
  /** The current time in milliseconds, for tests. */
  now?: () => number;
}

/** One host name's route as the cache knows it; without a route: the host name was forgotten. */
export type RouteEntry = [host: string, route?: ResolvedRoute | null];

/** What a cache knows: the routes of the table's listing, and those looked up one by one. */
export interface RouteSnapshot {
  listed: RouteEntry[];
  looked: RouteEntry[];
}

interface Entry {
  route: ResolvedRoute | null;
  used: number;
}

function sameRoute(a: ResolvedRoute | null, b: ResolvedRoute | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.app !== b.app || a.targets.length !== b.targets.length || (a.httpsRedirect === true) !== (b.httpsRedirect === true)) return false;
  return a.targets.every((target, i) => target.host === b.targets[i]?.host && target.port === b.targets[i]?.port);
}

/**
 * The routes, held in memory so that a request is routed without asking the route table.
 * When the table can list its routes, every one is known: `refresh()` (the first one before
 * the router serves, then every `refreshMs` and whenever the platform says routes changed)
 * reads the whole listing and keeps it, without age or count limit, as a proxy keeps the
 * routes of its configuration. Any other host name (one added since the last listing, a
 * table that cannot list, a name of no app) is looked up once when first seen (concurrent
 * requests share the lookup), then kept and looked up again with every refresh while it is
 * asked for; those are bounded (`maxEntries`, `forgetAfterMs`), so that a flood of made-up
 * names cannot push the listed routes out. A route the router finds with every process gone
 * is looked up at once (`resolve(host, true)`). Listeners hear every route that changed, with
 * whether it is a listed one, which is how a controller keeps its router workers' copies
 * current (`apply`). A failed lookup is not remembered; a failed refresh keeps what was known.
 */
export class RouteCache implements RouteTable {
  /** The routes of the table's last listing, by host name. */
  private readonly listed = new Map<string, ResolvedRoute>();
  /** The routes looked up one by one. */
  private readonly entries = new Map<string, Entry>();
  /** The table's last listing as it was taken in whole; null once `listed` changed otherwise. */
  private lastListing: Array<[string, ResolvedRoute]> | null = null;
  private readonly lookups = new Map<string, Promise<ResolvedRoute | null>>();
  private readonly listeners = new Set<(changed: RouteEntry[], listed: boolean) => void>();
  private readonly forgetAfterMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly timer: ReturnType<typeof setInterval> | null;
  private refreshing: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  /** Bumped by `refresh()` and `clear()`: a lookup started before it does not overwrite what came after. */
  private generation = 0;

  constructor(
    private readonly table: RouteTable,
    options: RouteCacheOptions = {},
  ) {
    this.forgetAfterMs = options.forgetAfterMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 100_000;
    this.now = options.now ?? Date.now;
    const refreshMs = options.refreshMs ?? 1000;
    this.timer = refreshMs > 0 ? setInterval(() => void this.refresh(), refreshMs) : null;
    this.timer?.unref();
  }

  /** The route of a host name when it is known (null: no app there), undefined when it must be looked up. */
  get(host: string): ResolvedRoute | null | undefined {
    const listed = this.listed.get(host);
    if (listed !== undefined) return listed;
    const entry = this.entries.get(host);
    if (entry === undefined) return undefined;
    entry.used = this.now();
    return entry.route;
  }

  /**
   * The route of a host name: the one known, or, when none is or `fresh` is set, the route
   * table's answer (then kept).
   * @throws whatever the route table throws (as a rejection); nothing is remembered then.
   */
  resolve(host: string, fresh = false): Promise<ResolvedRoute | null> {
    if (!fresh) {
      const known = this.get(host);
      if (known !== undefined) return Promise.resolve(known);
      const running = this.lookups.get(host);
      if (running !== undefined) return running;
    }
    const generation = this.generation;
    const lookup = this.table.resolve(host, fresh).then((route) => {
      if (generation === this.generation || !this.has(host)) this.store(host, route, true);
      return route;
    });
    if (!fresh) {
      this.lookups.set(host, lookup);
      const done = (): void => {
        if (this.lookups.get(host) === lookup) this.lookups.delete(host);
      };
      lookup.then(done, done);
    }
    return lookup;
  }

  /** Takes routes someone else looked up or listed (a worker's copy, fed by its controller). */
  apply(entries: readonly RouteEntry[], listed = false): void {
    if (listed) this.lastListing = null;
    for (const [host, route] of entries) {
      if (listed) {
        if (route === undefined || route === null) this.listed.delete(host);
        else {
          this.listed.set(host, route);
          this.entries.delete(host);
        }
      } else if (route === undefined) this.entries.delete(host);
      else this.store(host, route, false);
    }
  }

  /** Every route known, e.g. for a router worker that just started. */
  snapshot(): RouteSnapshot {
    return { listed: [...this.listed], looked: [...this.entries].map(([host, entry]) => [host, entry.route]) };
  }

  /** How many routes are known: listed, and looked up one by one. */
  size(): { listed: number; looked: number } {
    return { listed: this.listed.size, looked: this.entries.size };
  }

  /** Hears the routes that changed (and those seen for the first time), and whether they are of the listing. */
  onChange(listener: (changed: RouteEntry[], listed: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Reads the table's listing (when it can list) and looks every other known host name up
   * again now (forgetting those not asked for lately), and tells the listeners what changed;
   * resolves once done. Calls while one runs share it, then run once more so that a change
   * announced during a refresh is not missed.
   */
  refresh(): Promise<void> {
    this.generation += 1;
    const run = async (): Promise<void> => {
      this.announce(await this.relist(), true);
      const horizon = this.now() - this.forgetAfterMs;
      const changed: RouteEntry[] = [];
      for (const [host, entry] of [...this.entries]) {
        if (entry.used < horizon) {
          this.entries.delete(host);
          changed.push([host]);
          continue;
        }
        let route: ResolvedRoute | null;
        try {
          route = await this.table.resolve(host);
        } catch {
          continue;
        }
        const current = this.entries.get(host);
        if (current !== undefined && !sameRoute(current.route, route)) {
          current.route = route;
          changed.push([host, route]);
        }
      }
      this.announce(changed);
    };
    // One refresh runs at a time and at most one waits: every call made meanwhile shares the waiting one.
    if (this.queued !== null) return this.queued;
    const previous = this.refreshing ?? Promise.resolve();
    const go = (): Promise<void> => {
      if (this.queued === next) this.queued = null;
      this.refreshing = next;
      return run();
    };
    const next: Promise<void> = previous.then(go, go);
    this.queued = next;
    const settled = next.finally(() => {
      if (this.refreshing === next) this.refreshing = null;
    });
    settled.catch(() => undefined);
    return settled;
  }

  /** Forgets every route (and stops the background refresh when `stop` is set). */
  clear(stop = false): void {
    this.generation += 1;
    this.listed.clear();
    this.lastListing = null;
    this.entries.clear();
    if (stop && this.timer !== null) clearInterval(this.timer);
  }

  /**
   * Takes the table's whole listing in place of the last one; the changes, none when the table
   * cannot list or its listing failed (what was known is kept).
   */
  private async relist(): Promise<RouteEntry[]> {
    if (this.table.list === undefined) return [];
    let listing: Array<[string, ResolvedRoute]>;
    try {
      listing = await this.table.list();
    } catch {
      return [];
    }
    // The very same answer as last time (see RouteTable.list), with nothing changed here since: nothing to compare.
    if (listing === this.lastListing) return [];
    this.lastListing = listing;
    const changed: RouteEntry[] = [];
    const seen = new Set<string>();
    for (const [host, route] of listing) {
      seen.add(host);
      const current = this.listed.get(host);
      if (current === undefined || !sameRoute(current, route)) {
        this.listed.set(host, route);
        changed.push([host, route]);
      }
      // Looked up before it was listed: the listing has it now (a listener's copy moves it too).
      this.entries.delete(host);
    }
    for (const host of this.listed.keys()) {
      if (seen.has(host)) continue;
      this.listed.delete(host);
      changed.push([host]);
    }
    return changed;
  }

  private has(host: string): boolean {
    return this.listed.has(host) || this.entries.has(host);
  }

  private store(host: string, route: ResolvedRoute | null, announce: boolean): void {
    const listed = this.listed.get(host);
    if (listed !== undefined) this.lastListing = null;
    if (listed !== undefined && route !== null) {
      // A listed route looked up again (every process gone): it stays a listed one.
      this.listed.set(host, route);
      if (announce && !sameRoute(listed, route)) this.announce([[host, route]], true);
      return;
    }
    if (listed !== undefined) {
      // No longer routed: it leaves the listing until the next one says otherwise.
      this.listed.delete(host);
      if (announce) this.announce([[host]], true);
    }
    const current = this.entries.get(host);
    if (current !== undefined) {
      const changed = !sameRoute(current.route, route);
      current.route = route;
      if (changed && announce) this.announce([[host, route]]);
      return;
    }
    this.entries.set(host, { route, used: this.now() });
    const changed: RouteEntry[] = [[host, route]];
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
      changed.push([oldest.value]);
    }
    if (announce) this.announce(changed);
  }

  private announce(changed: RouteEntry[], listed = false): void {
    if (changed.length === 0) return;
    for (const listener of this.listeners) listener(changed, listed);
  }
}
