import { DEFAULT_SETTINGS, type Settings } from '@svc/core';
import { ConfigError } from './config-values';

/** The audit journal, webhooks and idempotency keys: the adapters' side (the core's is in Settings). */
export interface EventSettings {
  /**
   * WEBHOOK_ALLOWED_HOSTS: host names, IP addresses or CIDR ranges that deliveries may reach
   * although they are this host's, private, loopback or link-local; empty by default.
   */
  webhookAllowedHosts: string[];
  /** WEBHOOK_TIMEOUT_SECONDS: how long one delivery attempt may take. */
  webhookTimeoutMs: number;
  /** WEBHOOK_POLL_SECONDS: how often the delivery worker looks for due deliveries. */
  webhookPollMs: number;
}

type Env = Record<string, string | undefined>;
type Integer = (name: string, fallback: number, min: number, max: number) => number;

const ENTRY = /^[A-Za-z0-9.:\-[\]]+(\/\d{1,3})?$/;

/** `WEBHOOK_ALLOWED_HOSTS`: comma-separated host names, addresses or CIDR ranges. */
export function webhookAllowedHosts(env: Env): string[] {
  const entries = (env.WEBHOOK_ALLOWED_HOSTS ?? '').split(',').map((e) => e.trim().toLowerCase()).filter((e) => e !== '');
  for (const entry of entries) {
    if (!ENTRY.test(entry)) throw new ConfigError('WEBHOOK_ALLOWED_HOSTS', `"${entry}" is not a host name, an address or a CIDR range`);
  }
  return entries;
}

/** `WEBHOOK_TIMEOUT_SECONDS`: how long one delivery attempt may take. */
const webhookTimeoutSeconds = (integer: Integer): number => integer('WEBHOOK_TIMEOUT_SECONDS', 10, 1, 300);

/** How long an attempt's claim on its webhook outlives the attempt's timeout (writing its outcome, a slow database). */
const CLAIM_MARGIN_SECONDS = 60;

/**
 * The core's settings for events: EVENT_RETENTION_DAYS, WEBHOOK_RETRY_HOURS,
 * WEBHOOK_RETRY_BASE_SECONDS, WEBHOOKS_PER_APP, IDEMPOTENCY_RETENTION_HOURS, and fair delivery:
 * WEBHOOK_CONCURRENCY, WEBHOOK_CONCURRENCY_PER_OWNER (at most WEBHOOK_CONCURRENCY),
 * WEBHOOK_PAUSE_AFTER_FAILURES, WEBHOOK_PAUSE_MINUTES; a webhook's claim lasts
 * WEBHOOK_TIMEOUT_SECONDS and a margin.
 */
export function eventCoreSettings(integer: Integer): Pick<
  Settings,
  | 'eventRetentionDays'
  | 'webhookRetryHours'
  | 'webhookRetryBaseSeconds'
  | 'webhooksPerApp'
  | 'idempotencyRetentionHours'
  | 'webhookConcurrency'
  | 'webhookConcurrencyPerOwner'
  | 'webhookPauseAfterFailures'
  | 'webhookPauseMinutes'
  | 'webhookClaimSeconds'
> {
  const concurrency = integer('WEBHOOK_CONCURRENCY', DEFAULT_SETTINGS.webhookConcurrency, 1, 256);
  return {
    webhookConcurrency: concurrency,
    webhookConcurrencyPerOwner: integer('WEBHOOK_CONCURRENCY_PER_OWNER', Math.min(DEFAULT_SETTINGS.webhookConcurrencyPerOwner, concurrency), 1, concurrency),
    webhookPauseAfterFailures: integer('WEBHOOK_PAUSE_AFTER_FAILURES', DEFAULT_SETTINGS.webhookPauseAfterFailures, 1, 1000),
    webhookPauseMinutes: integer('WEBHOOK_PAUSE_MINUTES', DEFAULT_SETTINGS.webhookPauseMinutes, 1, 24 * 60),
    webhookClaimSeconds: webhookTimeoutSeconds(integer) + CLAIM_MARGIN_SECONDS,
    eventRetentionDays: integer('EVENT_RETENTION_DAYS', DEFAULT_SETTINGS.eventRetentionDays, 1, 36500),
    webhookRetryHours: integer('WEBHOOK_RETRY_HOURS', DEFAULT_SETTINGS.webhookRetryHours, 0, 24 * 30),
    webhookRetryBaseSeconds: integer('WEBHOOK_RETRY_BASE_SECONDS', DEFAULT_SETTINGS.webhookRetryBaseSeconds, 1, 3600),
    webhooksPerApp: integer('WEBHOOKS_PER_APP', DEFAULT_SETTINGS.webhooksPerApp, 1, 1000),
    idempotencyRetentionHours: integer('IDEMPOTENCY_RETENTION_HOURS', DEFAULT_SETTINGS.idempotencyRetentionHours, 1, 24 * 30),
  };
}

/** The adapters' settings for events. */
export function eventSettings(env: Env, integer: Integer): EventSettings {
  return {
    webhookAllowedHosts: webhookAllowedHosts(env),
    webhookTimeoutMs: webhookTimeoutSeconds(integer) * 1000,
    webhookPollMs: integer('WEBHOOK_POLL_SECONDS', 2, 1, 3600) * 1000,
  };
}
