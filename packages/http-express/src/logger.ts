/** The structured logger the HTTP edge writes to; pino's logger satisfies it. */
export interface HttpLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  /** False when lines of `level` are dropped, so that they need not be built; absent means true. */
  isLevelEnabled?(level: 'info'): boolean;
}

/** A logger that drops everything, for embedders that bring no logger. */
export const silentLogger: HttpLogger = Object.freeze({
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  isLevelEnabled: () => false,
});
