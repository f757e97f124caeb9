/** Variables the platform sets itself; pulled files leave them out and pushes skip them. */
export const SERVICE_VARIABLES = ['SVC_APP', 'SVC_RELEASE'];

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

function unquote(raw: string): string {
  const value = raw.trim();
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    return value.slice(1, -1).replace(/\\(["\\nrt$])/g, (_, c: string) => ({ n: '\n', r: '\r', t: '\t' })[c] ?? c);
  }
  if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) return value.slice(1, -1);
  // An unquoted value ends at a comment that follows whitespace.
  return value.replace(/\s+#.*$/, '');
}

/**
 * Reads `.env` text: `KEY=VALUE` lines, optional `export `, blank lines and `#` comments,
 * single- or double-quoted values (double quotes understand \n, \t, \" and \\).
 * @throws Error naming the first line that is not a variable.
 */
export function parseDotenv(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  text.split(/\r?\n/).forEach((line, index) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const body = trimmed.replace(/^export\s+/, '');
    const eq = body.indexOf('=');
    const key = eq < 0 ? '' : body.slice(0, eq).trim();
    if (!KEY.test(key)) throw new Error(`line ${index + 1} is not KEY=VALUE: ${trimmed.slice(0, 40)}`);
    values[key] = unquote(body.slice(eq + 1));
  });
  return values;
}

/** Writes variables as `.env` text, sorted, quoting values that need it. */
export function formatDotenv(values: Record<string, string>): string {
  return Object.keys(values)
    .sort()
    .map((key) => {
      const value = values[key] ?? '';
      const plain = /^[A-Za-z0-9_./:@%+,-]*$/.test(value);
      const quoted = `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t').replace(/\$/g, '\\$')}"`;
      return `${key}=${plain ? value : quoted}\n`;
    })
    .join('');
}

/** `KEY=VALUE` arguments into an object. */
export function assignments(args: readonly string[], what = 'KEY=VALUE'): Record<string, string> {
  const result: Record<string, string> = {};
  for (const arg of args) {
    const eq = arg.indexOf('=');
    if (eq <= 0) throw new Error(`expected ${what}, got ${arg}`);
    result[arg.slice(0, eq)] = arg.slice(eq + 1);
  }
  return result;
}
