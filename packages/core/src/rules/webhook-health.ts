import type { EndpointHealth } from '../model/events';
import { deliveryRetryDelaySeconds } from './events';

/** A receiver that has not failed since its last 2xx (or ever). */
export const HEALTHY_ENDPOINT: EndpointHealth = Object.freeze({ status: 'active', failures: 0, lastError: '', resumesAt: null });

/** What slows a failing receiver: the first pause, and after how many failures in a row it is paused, for how long. */
export interface EndpointBackoff {
  /** `WEBHOOK_RETRY_BASE_SECONDS`: the first pause after a failure; it doubles with each, at most an hour. */
  baseSeconds: number;
  /** `WEBHOOK_PAUSE_AFTER_FAILURES`: failures in a row that pause the receiver. */
  pauseAfterFailures: number;
  /** `WEBHOOK_PAUSE_MINUTES`: how long a paused receiver gets no attempt. */
  pauseMinutes: number;
}

/**
 * A receiver's health after one attempt. A 2xx resets it. A failure counts one more in a
 * row and puts its next attempt off by its own back-off (the delivery back-off, by the
 * receiver's failures rather than one delivery's attempts, so that a receiver that fails
 * every delivery is not tried afresh for each); from `pauseAfterFailures` in a row it is
 * paused for `pauseMinutes`, and each failed attempt after a pause pauses it again.
 */
export function healthAfter(health: EndpointHealth, delivered: boolean, error: string, now: Date, backoff: EndpointBackoff): EndpointHealth {
  if (delivered) return HEALTHY_ENDPOINT;
  const failures = health.failures + 1;
  if (failures >= backoff.pauseAfterFailures) {
    return { status: 'paused', failures, lastError: error, resumesAt: new Date(now.getTime() + backoff.pauseMinutes * 60_000) };
  }
  const pause = deliveryRetryDelaySeconds(failures, backoff.baseSeconds);
  return { status: 'failing', failures, lastError: error, resumesAt: new Date(now.getTime() + pause * 1000) };
}
