import { lookup } from 'node:dns/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { DeliveryAttempt, WebhookSender } from '@svc/core';
import { isAllowListed, isRestrictedAddress } from './webhook-addresses';

/** Options of HttpWebhookSender. */
export interface WebhookSenderOptions {
  /** WEBHOOK_ALLOWED_HOSTS: names, addresses or CIDR ranges deliveries may reach although restricted. */
  allowedHosts: readonly string[];
  /** How long one attempt may take, connection included. */
  timeoutMs: number;
  /** This host's addresses; default: those of its network interfaces. */
  ownAddresses?: readonly string[];
}

/** The addresses of this host's network interfaces. */
function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

/** How much of the receiver's answer is read (and dropped): enough to see it answered. */
const ANSWER_LIMIT = 64 * 1024;

/**
 * POSTs deliveries with node:http(s), never following redirects, to an address of the
 * receiver checked against the restricted ranges: the connection goes to that very address.
 */
export class HttpWebhookSender implements WebhookSender {
  private readonly own: readonly string[];

  constructor(private readonly options: WebhookSenderOptions) {
    this.own = options.ownAddresses ?? interfaceAddresses();
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<DeliveryAttempt> {
    const target = new URL(url);
    const host = target.hostname.replace(/^\[|\]$/g, '');
    let addresses: string[];
    try {
      addresses = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (error) {
      return { status: null, error: `the receiver's name did not resolve: ${(error as NodeJS.ErrnoException).code ?? 'error'}` };
    }
    const refused = addresses.filter((a) => isRestrictedAddress(a, this.own) && !isAllowListed(host, a, this.options.allowedHosts));
    if (addresses.length === 0 || refused.length > 0) {
      return { status: null, error: `refused: ${host} resolves to a restricted address (${refused.join(', ') || 'none'}) not in WEBHOOK_ALLOWED_HOSTS` };
    }
    const address = addresses[0] as string;
    return new Promise<DeliveryAttempt>((resolve) => {
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(
        target,
        {
          method: 'POST',
          headers: { ...headers, 'Content-Length': Buffer.byteLength(body), 'User-Agent': 'svc-controller-webhooks' },
          timeout: this.options.timeoutMs,
          // Connect to the address judged above, not to whatever a second lookup returns.
          lookup: (_name, options, callback) => {
            const family = isIP(address);
            if ((options as { all?: boolean }).all) (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
            else (callback as (e: null, a: string, f: number) => void)(null, address, family);
          },
        },
        (res) => {
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > ANSWER_LIMIT) res.destroy();
          });
          const status = res.statusCode ?? null;
          const done = (): void => resolve({ status, error: status !== null && status >= 200 && status < 300 ? '' : `the receiver answered ${status}` });
          res.on('end', done);
          res.on('close', done);
        },
      );
      const timer = setTimeout(() => req.destroy(new Error('timed out')), this.options.timeoutMs);
      req.on('error', (error) => resolve({ status: null, error: `the delivery failed: ${error.message}` }));
      req.on('close', () => clearTimeout(timer));
      req.end(body);
    });
  }
}
