import type { JournalSignal } from '@svc/core';
import { Client } from 'pg';
import type { RawRow } from './rows';
import type { Session } from './session';
import { readInteger, statement } from './sql';

const NEWEST_SEQ = statement('SELECT MAX("seq") AS "n" FROM "events"');

/** Options of DatabaseJournalSignal. */
export interface JournalSignalOptions {
  /** How often the journal's newest sequence number is read while anyone listens. */
  pollIntervalMs: number;
  /** PostgreSQL: the URL to `LISTEN svc_events` on (a connection of its own, outside the pool). */
  listenUrl?: string;
}

/**
 * Says when the journal may have grown, to every listener in this process, whichever
 * process appended. On PostgreSQL appends `NOTIFY svc_events` in their transaction, and a
 * connection of its own LISTENs, so followers hear of a commit at once; a poll of the
 * newest sequence number backs it up (a lost LISTEN connection is opened again). On SQLite
 * the poll alone serves. Nothing runs while nobody listens.
 */
export class DatabaseJournalSignal implements JournalSignal {
  private readonly listeners = new Set<() => void>();
  private timer: NodeJS.Timeout | null = null;
  private client: Client | null = null;
  private reconnect: NodeJS.Timeout | null = null;
  private lastSeq: number | null = null;
  private polling = false;

  constructor(
    private readonly session: Session,
    private readonly options: JournalSignalOptions,
  ) {}

  subscribe(listener: () => void): () => void {
    const subscription = (): void => listener();
    this.listeners.add(subscription);
    if (this.listeners.size === 1) this.start();
    return () => {
      if (!this.listeners.delete(subscription)) return;
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Stops listening and polling, whoever still listens. */
  close(): void {
    this.listeners.clear();
    this.stop();
  }

  private notify(): void {
    for (const listener of [...this.listeners]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  private start(): void {
    this.timer = setInterval(() => void this.poll(), this.options.pollIntervalMs);
    this.timer.unref();
    void this.poll();
    if (this.options.listenUrl !== undefined) void this.listen(this.options.listenUrl);
  }

  private stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.reconnect !== null) clearTimeout(this.reconnect);
    this.reconnect = null;
    const client = this.client;
    this.client = null;
    this.lastSeq = null;
    void client?.end().catch(() => undefined);
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const [row] = await this.session.rows<RawRow>(NEWEST_SEQ, []);
      const seq = row === undefined || row.n === null ? 0 : readInteger(row.n);
      const grew = this.lastSeq !== null && seq !== this.lastSeq;
      this.lastSeq = seq;
      if (grew) this.notify();
    } catch {
      // The database is away; the next poll tries again.
    } finally {
      this.polling = false;
    }
  }

  private async listen(url: string): Promise<void> {
    if (this.listeners.size === 0 || this.client !== null) return;
    const client = new Client({ connectionString: url });
    this.client = client;
    const retry = (): void => {
      if (this.client !== client) return;
      this.client = null;
      void client.end().catch(() => undefined);
      if (this.listeners.size === 0) return;
      this.reconnect = setTimeout(() => {
        this.reconnect = null;
        void this.listen(url);
      }, this.options.pollIntervalMs);
      this.reconnect.unref();
    };
    client.on('error', retry);
    client.on('end', retry);
    client.on('notification', () => this.notify());
    try {
      await client.connect();
      await client.query('LISTEN svc_events');
      // What was appended while the connection was being opened.
      this.notify();
    } catch {
      retry();
    }
  }
}
