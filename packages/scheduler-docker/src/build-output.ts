/** What the builders (a Dockerfile build, a buildpack compile) show the pusher of their output. */

/** A line longer than this many characters is cut, ending with `...`. */
export const BUILD_LINE_LIMIT = 2000;

// Everything the engine or a build prints that is not text: colours, cursor moves, other control characters.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const CONTROL = /\u001b\[[0-9;?]*[A-Za-z]|[\u0000-\u0008\u000b-\u001f\u007f]/g;

/** A line of build output without terminal control characters or trailing blanks. */
export function plainLine(line: string): string {
  return line.replace(CONTROL, '').trimEnd();
}

/**
 * Forwards output lines until `limitBytes` have gone (each line cut at `BUILD_LINE_LIMIT`
 * characters), then one line saying the rest is left out, and nothing after it.
 */
export function limitedOutput(output: (line: string) => void, limitBytes: number): (line: string) => void {
  let left = limitBytes;
  let cut = false;
  return (line: string) => {
    if (cut) return;
    const text = line.length > BUILD_LINE_LIMIT ? `${line.slice(0, BUILD_LINE_LIMIT)}...` : line;
    left -= Buffer.byteLength(text) + 1;
    if (left < 0) {
      cut = true;
      output('(further build output left out)');
      return;
    }
    output(text);
  };
}

/** The engine's message of a failed call (its JSON `message`), else the error's. */
export function buildErrorMessage(error: unknown): string {
  if (error !== null && typeof error === 'object') {
    const json = (error as { json?: { message?: unknown } }).json;
    if (json && typeof json.message === 'string') return json.message;
  }
  return error instanceof Error ? error.message : String(error);
}
