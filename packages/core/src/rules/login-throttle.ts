import type { LoginFailure } from '../ports/repositories';

/** The settings login throttling follows (see Settings). */
export interface LoginThrottleSettings {
  loginFailureLimit: number;
  loginFailureWindowSeconds: number;
  loginBackoffSeconds: number;
  loginBackoffMaxSeconds: number;
  loginUsernameFailureLimit: number;
}

/**
 * The client address failures are counted under: an IPv4 address as it is (also when
 * written IPv4-mapped, `::ffff:192.0.2.1`), an IPv6 address by its /64 network, which one
 * client usually holds whole; anything else (or nothing) as given, lower case.
 */
export function throttleAddress(address: string): string {
  const plain = address.trim().toLowerCase().replace(/%.*$/, '');
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/.exec(plain);
  if (mapped) return mapped[1] as string;
  if (!plain.includes(':')) return plain;
  const groups = expandIpv6(plain);
  return groups === null ? plain : `${groups.slice(0, 4).join(':')}::/64`;
}

function expandIpv6(address: string): string[] | null {
  const halves = address.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (!groups.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return null;
  return groups.map((group) => group.replace(/^0+(?=.)/, ''));
}

/**
 * How many seconds the client at `address` must wait before it may try `username` again,
 * 0 when it may try now, given the username's failures within the window (oldest first).
 *
 * Each address gets `loginFailureLimit` failures for free; from then on, each further
 * attempt waits `loginBackoffSeconds` after the address's last failure, doubled for each
 * failure past the limit, up to `loginBackoffMaxSeconds`. Once the username has
 * `loginUsernameFailureLimit` failures from all addresses together, no address gets free
 * failures: each waits from its own first one. An address without failures of its own
 * always gets its attempt, so that nobody elsewhere can lock the real user out.
 */
export function loginRetryAfterSeconds(failures: readonly LoginFailure[], address: string, now: Date, settings: LoginThrottleSettings): number {
  const key = throttleAddress(address);
  const own = failures.filter((failure) => failure.address === key);
  const free = failures.length >= settings.loginUsernameFailureLimit ? 0 : settings.loginFailureLimit;
  if (own.length === 0 || own.length < free) return 0;
  const exponent = own.length - Math.max(free, 1);
  // 2^exponent grows past any maximum quickly: stop doubling before the number does.
  const delay = exponent >= 31 ? settings.loginBackoffMaxSeconds : Math.min(settings.loginBackoffSeconds * 2 ** exponent, settings.loginBackoffMaxSeconds);
  const last = own[own.length - 1] as LoginFailure;
  const waitMs = last.at.getTime() + delay * 1000 - now.getTime();
  return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0;
}

/** The most failed logins journaled per client address (as `throttleAddress` counts it) in any minute. */
export const FAILED_LOGINS_JOURNALED_PER_MINUTE = 10;

/**
 * Whether a failed login goes to the journal: only when the username is an account (a
 * failure for a name nobody holds is nobody's, and would be read by whoever registers it
 * later), and only while the client's failures of the last minute, this one included, are
 * at most `FAILED_LOGINS_JOURNALED_PER_MINUTE`, so that no client can fill an account's
 * journal. Throttling counts every failure all the same.
 */
export function journalsFailedLogin(accountExists: boolean, failuresFromClientLastMinute: number): boolean {
  return accountExists && failuresFromClientLastMinute <= FAILED_LOGINS_JOURNALED_PER_MINUTE;
}
