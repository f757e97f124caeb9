import { AsyncLocalStorage } from 'node:async_hooks';
import { X509Certificate } from 'node:crypto';
import { Agent } from 'node:https';
import { rootCertificates } from 'node:tls';
import * as acme from 'acme-client';
import { IssuanceFailed, type CertificateAuthority, type IssuanceRequest, type IssuedCertificate } from '@svc/core';
import { reasonOf } from './problems';
import { retryAfterOf } from './retry-after';

/** Options of AcmeCertificateAuthority. */
export interface AcmeAuthorityOptions {
  /** The ACME directory URL, e.g. Let's Encrypt's `https://acme-v02.api.letsencrypt.org/directory`. */
  directory: string;
  /** The account's contact address; absent: none. */
  email?: string | null;
  /** PEM certificates to trust for the ACME server's own HTTPS besides the system's (a test server such as pebble); absent: the system's only. */
  ca?: string | null;
  /** How long one issuance may take in all. Default 180 s. */
  timeoutMs?: number;
  /** The first wait while the server validates or finalizes; it grows up to ten times that. Default 1000 ms. */
  pollMs?: number;
}

/** What one issuance heard from the server beyond the library's errors. */
interface Heard {
  retryAfter: Date | null;
  /** The server answered that a rate limit was reached. */
  rateLimited: boolean;
}

/** The problem type of a rate limit (RFC 8555 §6.7). */
const RATE_LIMITED = 'urn:ietf:params:acme:error:rateLimited';

const heard = new AsyncLocalStorage<Heard>();
let listening = false;

/**
 * Reads the server's Retry-After on rate-limit and unavailable answers (the library keeps
 * only the problem's detail), and turns off the library's own retries, which would sleep for
 * the whole Retry-After (hours, for a rate limit) inside one issuance: the controller puts
 * the next attempt off itself instead. The library's HTTP client is one per process.
 */
function listenForRetryAfter(ca: string | null): void {
  if (ca !== null) acme.axios.defaults.httpsAgent = new Agent({ ca: [ca, ...tlsRootCertificates()] });
  if (listening) return;
  listening = true;
  const settings = (acme.axios.defaults as unknown as { acmeSettings: { retryMaxAttempts: number } }).acmeSettings;
  settings.retryMaxAttempts = 0;
  acme.axios.interceptors.response.use((response) => {
    const store = heard.getStore();
    if (store === undefined) return response;
    if (response.status === 429 || response.status === 503) {
      store.retryAfter = retryAfterOf(response.headers['retry-after'], new Date()) ?? store.retryAfter;
    }
    if (response.status === 429 || (response.data as { type?: unknown } | null)?.type === RATE_LIMITED) store.rateLimited = true;
    return response;
  });
}

function tlsRootCertificates(): string[] {
  // Trusting an extra CA must not mean distrusting the public ones.
  return [...rootCertificates];
}

/** The expiry and start of the first certificate of a PEM chain. */
export function validityOf(chain: string): { starts: Date; expires: Date } {
  const first = chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/);
  if (first === null) throw new Error('the ACME server returned no certificate');
  const certificate = new X509Certificate(first[0]);
  return { starts: new Date(certificate.validFrom), expires: new Date(certificate.validTo) };
}

/**
 * A CertificateAuthority over ACME (RFC 8555) with `acme-client`: one account per
 * directory (its key given by the caller), one certificate per host name with a new ECDSA
 * P-256 key, control proven with HTTP-01 through the caller's challenge board (the router
 * serves the answers). The controller does not fetch the challenge itself first: proving
 * the name is the ACME server's job, and its answer is what the owner is shown.
 */
export class AcmeCertificateAuthority implements CertificateAuthority {
  readonly directory: string;
  private readonly timeoutMs: number;
  private readonly pollMs: number;
  /** Account URLs by account key, learnt once per process. */
  private readonly accounts = new Map<string, string>();

  constructor(private readonly options: AcmeAuthorityOptions) {
    this.directory = options.directory;
    this.timeoutMs = options.timeoutMs ?? 180_000;
    this.pollMs = options.pollMs ?? 1000;
    listenForRetryAfter(options.ca ?? null);
  }

  async createAccountKey(): Promise<string> {
    return (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
  }

  /** @throws IssuanceFailed with the server's reason, its Retry-After and whether a rate limit was reached. */
  issue(request: IssuanceRequest): Promise<IssuedCertificate> {
    const state: Heard = { retryAfter: null, rateLimited: false };
    return heard.run(state, async () => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the issuance took longer than ${Math.round(this.timeoutMs / 1000)} s`)), this.timeoutMs);
      });
      try {
        return await Promise.race([this.order(request), timeout]);
      } catch (error) {
        throw new IssuanceFailed(reasonOf(error, this.directory), state.retryAfter, state.rateLimited);
      } finally {
        clearTimeout(timer);
      }
    });
  }

  /**
   * Makes sure the client knows its account's URL: remembered from an earlier issuance of this
   * process, else registered (or found, when another process or an earlier start registered
   * the key). Finding an existing account makes the library send an update of it, which a
   * server may refuse when nothing changes (no contact address): the account is known by then,
   * and the refusal does not matter.
   */
  private async register(client: acme.Client, accountKey: string): Promise<void> {
    const known = this.accounts.get(accountKey);
    if (known !== undefined) return;
    try {
      await client.createAccount({ termsOfServiceAgreed: true, ...(this.options.email ? { contact: [`mailto:${this.options.email}`] } : {}) });
    } catch (error) {
      try {
        client.getAccountUrl();
      } catch {
        throw error;
      }
    }
    this.accounts.set(accountKey, client.getAccountUrl());
  }

  private async order(request: IssuanceRequest): Promise<IssuedCertificate> {
    const accountUrl = this.accounts.get(request.accountKey);
    const client = new acme.Client({
      directoryUrl: this.directory,
      accountKey: request.accountKey,
      ...(accountUrl === undefined ? {} : { accountUrl }),
      backoffAttempts: 12,
      backoffMin: this.pollMs,
      backoffMax: this.pollMs * 10,
    });
    await this.register(client, request.accountKey);
    const [key, csr] = await acme.crypto.createCsr({ commonName: request.name, altNames: [request.name] }, await acme.crypto.createPrivateEcdsaKey('P-256'));
    const certificate = await client.auto({
      csr,
      termsOfServiceAgreed: true,
      challengePriority: ['http-01'],
      skipChallengeVerification: true,
      challengeCreateFn: async (authz, challenge, keyAuthorization) => {
        if (challenge.type !== 'http-01') throw new Error(`the server offers no HTTP-01 challenge for ${authz.identifier.value}`);
        await request.challenges.publish(challenge.token, keyAuthorization, authz.identifier.value.toLowerCase());
      },
      challengeRemoveFn: async (_authz, challenge) => {
        await request.challenges.withdraw(challenge.token);
      },
    });
    return { certificate, key: key.toString(), ...validityOf(certificate) };
  }
}
