import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * Why the sandbox tests cannot run here, or null when they can: they need Linux, root (to run
 * apps as users of their own), bubblewrap able to make namespaces, and iptables.
 */
export function sandboxUnavailable(): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'the tests do not run as root';
  const bwrap = ['/usr/bin/bwrap', '/usr/local/bin/bwrap'].find((path) => existsSync(path));
  if (bwrap === undefined) return 'bubblewrap is not installed (apt-get install bubblewrap)';
  try {
    execFileSync(bwrap, ['--unshare-pid', '--ro-bind', '/', '/', '--proc', '/proc', 'true'], { stdio: 'pipe', timeout: 10_000 });
  } catch (error) {
    return `bubblewrap cannot make namespaces here: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (!existsSync('/usr/sbin/iptables') && !existsSync('/sbin/iptables')) return 'iptables is not installed';
  return null;
}

/**
 * `describe`, or `describe.skip` with the reason printed when the sandbox is unavailable;
 * with CI=true the tests run anyway and fail loudly.
 */
export function describeWithSandbox(name: string, body: () => void): void {
  const problem = sandboxUnavailable();
  if (problem !== null && process.env.CI !== 'true') {
    process.stdout.write(`${name}: not run, ${problem}\n`);
    describe.skip(name, body);
    return;
  }
  describe(name, body);
}

/** A uid range of its own for one test file: parallel test files must not share users or firewall chains. */
export function testUidRange(): { from: number; to: number } {
  const from = 300000 + Math.floor(Math.random() * 5000) * 100;
  return { from, to: from + 99 };
}
