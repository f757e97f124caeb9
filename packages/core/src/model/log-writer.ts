import type { LogEntry } from './entities';
import { KeyedQueue } from './keyed-queue';
import type { Clock, LogStore } from '../ports/services';

/** How long lines wait to be written together. */
const FLUSH_DELAY_MS = 50;
/** How many waiting lines of one app make a write happen at once. */
const FLUSH_LINES = 500;

/**
 * Writes log lines to the app logs in batches, in the order they were produced: one append
 * per app at a time. A failing log store loses lines but never stops a process or container:
 * what the schedulers use for the output of what they run.
 */
export class BatchedLogWriter {
  private readonly pending = new Map<string, LogEntry[]>();
  private readonly writes = new KeyedQueue();
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly logs: Pick<LogStore, 'append'>,
    private readonly clock: Clock,
  ) {}

  /** Queues one line of the app's log, stamped now. */
  write(app: string, source: string, message: string): void {
    const entries = this.pending.get(app) ?? [];
    entries.push({ time: this.clock.now(), source, message });
    this.pending.set(app, entries);
    if (entries.length >= FLUSH_LINES) this.startWrite(app);
    else this.timer ??= setTimeout(() => this.flushAll(), FLUSH_DELAY_MS);
  }

  /** Writes everything queued and resolves once every write has finished. */
  async flush(): Promise<void> {
    this.flushAll();
    await this.writes.settled();
  }

  /** Writes what is queued for one app and resolves once its writes have finished. */
  async flushApp(app: string): Promise<void> {
    this.startWrite(app);
    await this.writes.settled(app);
  }

  private flushAll(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (const app of [...this.pending.keys()]) this.startWrite(app);
  }

  private startWrite(app: string): void {
    const entries = this.pending.get(app);
    this.pending.delete(app);
    if (!entries || entries.length === 0) return;
    // A failing store loses these lines; the next write of the app still happens.
    this.writes.run(app, () => this.logs.append(app, entries)).catch(() => undefined);
  }
}
