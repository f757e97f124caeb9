const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** Formats an instant as the application-level timestamp `YYYY-MM-DDTHH:MM:SSUTC`. */
export function formatTimestamp(date: Date): string {
  return (
    `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}` +
    `T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}UTC`
  );
}

/** Formats a log entry as one line: `<timestamp> <source>: <message>`. */
export function formatLogLine(entry: { time: Date; source: string; message: string }): string {
  return `${formatTimestamp(entry.time)} ${entry.source}: ${entry.message}`;
}
