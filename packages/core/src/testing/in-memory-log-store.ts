import type { LogEntry } from '../model/entities';
import { LogSubscribers } from '../model/log-subscribers';
import type { LogListener, LogStore } from '../ports/services';

/** Keeps each app's log lines in memory, optionally capped to the most recent ones. */
export class InMemoryLogStore implements LogStore {
  private readonly logs = new Map<string, LogEntry[]>();
  private readonly subscribers = new LogSubscribers();
  private readonly maxEntriesPerApp: number;

  constructor(options: { maxEntriesPerApp?: number } = {}) {
    this.maxEntriesPerApp = options.maxEntriesPerApp ?? Number.POSITIVE_INFINITY;
  }

  /** Adds entries after the existing ones, dropping the oldest beyond the cap. */
  async append(app: string, entries: LogEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const log = this.logs.get(app) ?? [];
    log.push(...entries.map(copyEntry));
    if (log.length > this.maxEntriesPerApp) log.splice(0, log.length - this.maxEntriesPerApp);
    this.logs.set(app, log);
    this.subscribers.notify(app, entries);
  }

  /** The last `lines` entries, oldest first; none for an unknown app or a count below 1. */
  async tail(app: string, lines: number): Promise<LogEntry[]> {
    const count = Math.floor(lines);
    if (!(count > 0)) return [];
    return (this.logs.get(app) ?? []).slice(-count).map(copyEntry);
  }

  /** Forgets the app's log. */
  async remove(app: string): Promise<void> {
    this.logs.delete(app);
  }

  /** Calls `listener` with the entries of every later append to the app, until unsubscribed. */
  subscribe(app: string, listener: LogListener): () => void {
    return this.subscribers.add(app, listener);
  }

  /** How many listeners the app's log has: lets a test see that a reader unsubscribed. */
  listenerCount(app: string): number {
    return this.subscribers.count(app);
  }

  /** Every stored entry of the app, oldest first. */
  entries(app: string): LogEntry[] {
    return (this.logs.get(app) ?? []).map(copyEntry);
  }

  /** The messages of the app's log, oldest first: the usual thing a test asserts on. */
  messages(app: string): string[] {
    return (this.logs.get(app) ?? []).map((e) => e.message);
  }

  /** Apps that have at least one stored line, sorted. */
  apps(): string[] {
    return [...this.logs.keys()].sort();
  }
}

function copyEntry(entry: LogEntry): LogEntry {
  return { time: new Date(entry.time.getTime()), source: entry.source, message: entry.message };
}
