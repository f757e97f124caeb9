import { existsSync } from 'node:fs';

/** The Chromium the browser tests drive: `CHROMIUM_PATH`, or Debian's package. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null when they can. */
export function browserUnavailable(): string | null {
  return existsSync(CHROMIUM_PATH) ? null : `no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`;
}

/**
 * `describe` when the browser is there; otherwise `describe.skip` with the reason printed,
 * except with CI=true, where the tests run anyway and fail loudly.
 */
export function describeInBrowser(name: string, body: () => void): void {
  const problem = browserUnavailable();
  if (problem !== null && process.env.CI !== 'true') {
    process.stdout.write(`${name}: not run, ${problem}\n`);
    describe.skip(name, body);
    return;
  }
  describe(name, body);
}

/** Retries an assertion until it passes or `timeoutMs` runs out (then its last failure is thrown). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
