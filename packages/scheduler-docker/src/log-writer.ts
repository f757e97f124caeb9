import type { Clock, LogEntry, LogStore } from '@svc/core';

const FLUSH_DELAY_MS = 50;
const FLUSH_LINES = 500;

/**
 * Writes log lines to the app logs in batches, in the order they were produced: one append
 * per app at a time. A failing log store loses lines but never stops a container.
 */
export class BatchedLogWriter {
  private readonly pending = new Map<string, LogEntry[]>();
  private readonly chains = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly logs: Pick<LogStore, 'append'>,
    private readonly clock: Clock,
  ) {}

  write(app: string, source: string, message: string): void {
    const entries = this.pending.get(app) ?? [];
    entries.push({ time: this.clock.now(), source, message });
    this.pending.set(app, entries);
    if (entries.length >= FLUSH_LINES) this.startWrite(app);
    else this.timer ??= setTimeout(() => this.flushAll(), FLUSH_DELAY_MS);
  }

  async flush(): Promise<void> {
    this.flushAll();
    await Promise.all([...this.chains.values()]);
  }

  async flushApp(app: string): Promise<void> {
    this.startWrite(app);
    await this.chains.get(app);
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
    const previous = this.chains.get(app) ?? Promise.resolve();
    const next = previous.then(() => this.logs.append(app, entries)).catch(() => undefined);
    this.chains.set(app, next);
    void next.then(() => {
      if (this.chains.get(app) === next) this.chains.delete(app);
    });
  }
}
