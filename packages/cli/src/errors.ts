/**
 * Exit codes scripts can rely on (docs/cli.md):
 * 0 success; 1 the server refused or failed the request; 2 usage (unknown command, missing
 * argument, bad option); 3 not logged in or the credentials were refused; 4 the controller
 * could not be reached. `svc run` exits with the remote command's exit code instead.
 */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  auth: 3,
  unreachable: 4,
} as const;

/** A failure to report to the user in one line, with the exit code it stands for. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
  }
}

/** A wrong use of the command line (exit 2). */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/** The controller answered with an error status; the message is the server's reason. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message, status === 401 ? EXIT.auth : EXIT.failed);
  }
}

/** The server's reason in one line: `detail`, a bare string (1.0), or every field's messages. */
export function reasonOf(status: number, body: unknown, text: string): string {
  if (typeof body === 'string' && body.trim() !== '') return body;
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const record = body as Record<string, unknown>;
    if (typeof record.detail === 'string') return record.detail;
    const parts: string[] = [];
    for (const [field, messages] of Object.entries(record)) {
      const list = Array.isArray(messages) ? messages.map(String) : [String(messages)];
      parts.push(field === 'non_field_errors' ? list.join(' ') : `${field}: ${list.join(' ')}`);
    }
    if (parts.length > 0) return parts.join('; ');
  }
  const trimmed = text.trim();
  return trimmed !== '' && trimmed.length < 200 ? `${status} ${trimmed}` : `the server answered ${status}`;
}
