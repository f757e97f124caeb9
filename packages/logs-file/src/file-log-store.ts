import { appendFile, mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { KeyedQueue, LogSubscribers, type LogEntry, type LogListener, type LogStore } from '@svc/core';
import { formatLine, parseLine } from './line-format';
import { isNotFound, readLastLines } from './read-last-lines';

const APP_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const DEFAULT_MAX_BYTES = 8 * 1024 * 1024;
const DEFAULT_CHUNK_BYTES = 64 * 1024;

/** Options of FileLogStore. */
export interface FileLogStoreOptions {
  /** Size at which an app's log is rotated to `<app>.log.1`. Default 8 MiB. */
  maxBytesPerApp?: number;
  /** Size of the chunks `tail` reads backwards. Default 64 KiB. */
  readChunkBytes?: number;
}

/**
 * Keeps each app's log in `<directory>/<app>.log`, one entry per line as
 * `<ISO time>\t<source>\t<message>` with backslash, newline, carriage return and tab
 * escaped. When the next append would take a file past `maxBytesPerApp`, the file is
 * renamed to `<app>.log.1` (replacing the previous one) and a new file is started, so an
 * app keeps between one and two files' worth of lines. Operations on one app run one at
 * a time within this process; the directory must not be shared by two processes, and
 * subscribers hear of the appends made through this instance.
 */
export class FileLogStore implements LogStore {
  private readonly maxBytes: number;
  private readonly chunkBytes: number;
  private readonly queue = new KeyedQueue();
  private readonly subscribers = new LogSubscribers();
  private directoryReady: Promise<unknown> | null = null;

  constructor(
    private readonly directory: string,
    options: FileLogStoreOptions = {},
  ) {
    this.maxBytes = positive(options.maxBytesPerApp ?? DEFAULT_MAX_BYTES, 'maxBytesPerApp');
    this.chunkBytes = positive(options.readChunkBytes ?? DEFAULT_CHUNK_BYTES, 'readChunkBytes');
  }

  /**
   * Appends the entries after the app's existing lines, creating the directory on first use.
   * @throws Error (as a rejection) when `app` is not a valid app id.
   */
  async append(app: string, entries: LogEntry[]): Promise<void> {
    const path = this.pathOf(app);
    const text = entries.map(formatLine).join('');
    if (text === '') return;
    await this.serial(app, async () => {
      const size = await sizeOf(path);
      if (size > 0 && size + Buffer.byteLength(text) > this.maxBytes) await rename(path, `${path}.1`);
      await this.ensureDirectory();
      try {
        await appendFile(path, text);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        // The directory was removed behind our back since it was created: create it again.
        this.directoryReady = null;
        await this.ensureDirectory();
        await appendFile(path, text);
      }
      // Still inside the app's queue: a listener never hears of a line after a later one.
      this.subscribers.notify(app, entries);
    });
  }

  /**
   * The last `lines` entries, oldest first, taken from the rotated file too when the
   * current one has fewer; an unknown app has none.
   * @throws Error (as a rejection) when `app` is not a valid app id.
   */
  async tail(app: string, lines: number): Promise<LogEntry[]> {
    const path = this.pathOf(app);
    const count = Math.floor(lines);
    if (!(count > 0)) return [];
    return this.serial(app, async () => {
      const recent = await readLastLines(path, count, this.chunkBytes);
      const older = recent.length < count ? await readLastLines(`${path}.1`, count - recent.length, this.chunkBytes) : [];
      return [...older, ...recent].map(parseLine).filter((entry): entry is LogEntry => entry !== null);
    });
  }

  /**
   * Deletes the app's log files; removing an app without logs is fine.
   * @throws Error (as a rejection) when `app` is not a valid app id.
   */
  async remove(app: string): Promise<void> {
    const path = this.pathOf(app);
    await this.serial(app, async () => {
      await rm(path, { force: true });
      await rm(`${path}.1`, { force: true });
    });
  }

  /**
   * Calls `listener` with the entries of every later append to the app through this
   * instance, once they are written, until the returned function is called.
   * @throws Error when `app` is not a valid app id.
   */
  subscribe(app: string, listener: LogListener): () => void {
    this.pathOf(app);
    return this.subscribers.add(app, listener);
  }

  /** Validates first, so that no name can point outside the directory. */
  private pathOf(app: string): string {
    if (!APP_NAME.test(app)) throw new Error(`Invalid app name for a log file: ${JSON.stringify(app)}`);
    return join(this.directory, `${app}.log`);
  }

  /** Runs `operation` after every earlier operation on the same app has settled. */
  private serial<T>(app: string, operation: () => Promise<T>): Promise<T> {
    return this.queue.run(app, operation);
  }

  private ensureDirectory(): Promise<unknown> {
    if (this.directoryReady === null) {
      const attempt = mkdir(this.directory, { recursive: true });
      this.directoryReady = attempt;
      // A failed creation (e.g. a permission fixed later) is tried again on the next append.
      attempt.catch(() => {
        if (this.directoryReady === attempt) this.directoryReady = null;
      });
    }
    return this.directoryReady;
  }
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (error) {
    if (isNotFound(error)) return 0;
    throw error;
  }
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got ${value}`);
  return value;
}
