import { fstatSync, writeSync } from 'node:fs';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { KeyedQueue, LogSubscribers, type LogEntry, type LogListener, type LogStore } from '@svc/core';
import { formatLine, parseLine } from './line-format';
import { isNotFound, readLastLines } from './read-last-lines';

const APP_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const DEFAULT_MAX_BYTES = 8 * 1024 * 1024;
const DEFAULT_CHUNK_BYTES = 64 * 1024;
const DEFAULT_MAX_OPEN_FILES = 64;

/** Options of FileLogStore. */
export interface FileLogStoreOptions {
  /** Size at which an app's log is rotated to `<app>.log.1`. Default 8 MiB. */
  maxBytesPerApp?: number;
  /** Size of the chunks `tail` reads backwards. Default 64 KiB. */
  readChunkBytes?: number;
  /** How many apps' log files are kept open for appending at most (the least recently written are closed). Default 64. */
  maxOpenFiles?: number;
}

/**
 * Keeps each app's log in `<directory>/<app>.log`, one entry per line as
 * `<ISO time>\t<source>\t<message>` with backslash, newline, carriage return and tab
 * escaped. When the next append would take a file past `maxBytesPerApp`, the file is
 * renamed to `<app>.log.1` (replacing the previous one) and a new file is started, so an
 * app keeps between one and two files' worth of lines. Operations on one app run one at
 * a time within this process; the directory must not be shared by two processes, and
 * subscribers hear of the appends made through this instance.
 *
 * The files of the apps that wrote last stay open for appending (at most `maxOpenFiles`):
 * opening and closing a file for every append cost more than the write itself, and the
 * append itself is written synchronously (see `writeAll`). Before each
 * append the open file is asked for its size (rotation) and whether it still has a name: a
 * file removed behind the store's back (its directory deleted, say) is opened again by its
 * path, so the line lands where `tail` reads, as it would with a file opened every time.
 */
export class FileLogStore implements LogStore {
  private readonly maxBytes: number;
  private readonly chunkBytes: number;
  private readonly queue = new KeyedQueue();
  private readonly subscribers = new LogSubscribers();
  private readonly maxOpen: number;
  /** The open files by app, least recently written first. Used and closed only in their app's queue. */
  private readonly files = new Map<string, FileHandle>();
  private directoryReady: Promise<unknown> | null = null;

  constructor(
    private readonly directory: string,
    options: FileLogStoreOptions = {},
  ) {
    this.maxBytes = positive(options.maxBytesPerApp ?? DEFAULT_MAX_BYTES, 'maxBytesPerApp');
    this.chunkBytes = positive(options.readChunkBytes ?? DEFAULT_CHUNK_BYTES, 'readChunkBytes');
    this.maxOpen = positive(options.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES, 'maxOpenFiles');
  }

  /**
   * Appends the entries after the app's existing lines, creating the directory on first use.
   * @throws Error (as a rejection) when `app` is not a valid app id.
   */
  async append(app: string, entries: LogEntry[]): Promise<void> {
    const path = this.pathOf(app);
    const text = entries.map(formatLine).join('');
    if (text === '') return;
    const bytes = Buffer.from(text);
    await this.serial(app, async () => {
      let file = await this.fileOf(app, path);
      let stats = fstatSync(file.fd);
      if (stats.nlink === 0) {
        // Removed behind our back since it was opened: write where the path leads now.
        this.forget(app, file);
        file = await this.fileOf(app, path);
        stats = fstatSync(file.fd);
      }
      if (stats.size > 0 && stats.size + bytes.length > this.maxBytes) {
        this.forget(app, file);
        await rename(path, `${path}.1`);
        file = await this.fileOf(app, path);
      }
      writeAll(file, bytes);
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
      const file = this.files.get(app);
      if (file !== undefined) this.forget(app, file);
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

  /** Closes the files kept open, once the appends in flight are written; a later append opens its file again. */
  async close(): Promise<void> {
    const open = [...this.files.keys()];
    await Promise.all(
      open.map((app) =>
        this.serial(app, async () => {
          const file = this.files.get(app);
          if (file === undefined) return;
          this.files.delete(app);
          await file.close();
        }),
      ),
    );
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

  /**
   * The app's log file, open for appending (created, with the directory, when missing); it
   * becomes the most recently used. Only inside the app's queue.
   */
  private async fileOf(app: string, path: string): Promise<FileHandle> {
    const kept = this.files.get(app);
    if (kept !== undefined) {
      this.files.delete(app);
      this.files.set(app, kept);
      return kept;
    }
    await this.ensureDirectory();
    let file: FileHandle;
    try {
      file = await open(path, 'a');
    } catch (error) {
      if (!isNotFound(error)) throw error;
      // The directory was removed behind our back since it was created: create it again.
      this.directoryReady = null;
      await this.ensureDirectory();
      file = await open(path, 'a');
    }
    this.files.set(app, file);
    for (const [other, handle] of this.files) {
      if (this.files.size <= this.maxOpen) break;
      // Closed in its own app's queue, after whatever that app is writing now.
      this.files.delete(other);
      void this.serial(other, () => handle.close()).catch(() => undefined);
    }
    return file;
  }

  /** Closes the app's open file and forgets it (inside the app's queue: nothing else uses it). */
  private forget(app: string, file: FileHandle): void {
    if (this.files.get(app) === file) this.files.delete(app);
    file.close().catch(() => undefined);
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

/**
 * Writes every byte of `bytes` at the end of the file (a write may take only part of them).
 * The size check and the write are synchronous: a few lines into the page cache take a few
 * microseconds, less than a round trip through the thread pool costs (as SQLite's commits
 * on the same event loop are).
 */
function writeAll(file: FileHandle, bytes: Buffer): void {
  for (let offset = 0; offset < bytes.length; ) offset += writeSync(file.fd, bytes, offset, bytes.length - offset);
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got ${value}`);
  return value;
}
