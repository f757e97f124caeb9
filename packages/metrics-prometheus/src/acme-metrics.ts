import { Counter, Gauge, type Registry } from 'prom-client';
import type { AcmeObserver, TlsName } from '@svc/core';

/** What the ACME metrics read at each scrape. */
export interface AcmeMetricsSource {
  /** Every name automatic HTTPS knows, with its state and expiry. */
  names(): Promise<TlsName[]>;
}

/**
 * Adds the metrics of automatic HTTPS to `registry`: issuance attempts by outcome (a
 * counter; hand the result to the core as its AcmeObserver), the names in each state, and
 * the soonest expiry of an issued certificate (what an alert watches). Read from the shared
 * database at each scrape, so every controller process reports the same.
 */
export function createAcmeMetrics(registry: Registry, source: AcmeMetricsSource): AcmeObserver {
  const registers = [registry];
  const attempts = new Counter({
    name: 'svc_acme_issuance_attempts_total',
    help: 'Certificate issuances and renewals over ACME tried by this process, by outcome (issued, failed).',
    labelNames: ['outcome'],
    registers,
  });
  for (const outcome of ['issued', 'failed']) attempts.inc({ outcome }, 0);
  new Gauge({
    name: 'svc_tls_names',
    help: 'Host names of apps that get certificates over ACME, by state (pending, issued, failed).',
    labelNames: ['state'],
    registers,
    async collect() {
      const counts: Record<string, number> = { pending: 0, issued: 0, failed: 0 };
      for (const name of await source.names()) counts[name.state] = (counts[name.state] ?? 0) + 1;
      this.reset();
      for (const [state, count] of Object.entries(counts)) this.set({ state }, count);
    },
  });
  new Gauge({
    name: 'svc_tls_certificate_expiry_seconds',
    help: 'Seconds until the soonest-expiring certificate issued over ACME expires (absent when none is issued).',
    registers,
    async collect() {
      const expiries = (await source.names()).filter((name) => name.expires !== null).map((name) => (name.expires as Date).getTime());
      this.reset();
      if (expiries.length > 0) this.set((Math.min(...expiries) - Date.now()) / 1000);
    },
  });
  return { attempted: (outcome) => attempts.inc({ outcome }) };
}
