import { DEFAULT_SETTINGS } from '@svc/core';
import { loadConfig } from '../src';

describe('fair webhook delivery settings', () => {
  it('default to 8 attempts at once, 2 per owner, a pause of 30 minutes after 5 failures, a claim outliving the timeout', () => {
    const { settings } = loadConfig({});
    expect(settings).toMatchObject({
      webhookConcurrency: 8,
      webhookConcurrencyPerOwner: 2,
      webhookPauseAfterFailures: 5,
      webhookPauseMinutes: 30,
      webhookClaimSeconds: 70,
    });
    expect(settings.webhookConcurrency).toBe(DEFAULT_SETTINGS.webhookConcurrency);
  });

  it('are read from the environment; the claim follows WEBHOOK_TIMEOUT_SECONDS', () => {
    const { settings, events } = loadConfig({
      WEBHOOK_CONCURRENCY: '16', WEBHOOK_CONCURRENCY_PER_OWNER: '4', WEBHOOK_PAUSE_AFTER_FAILURES: '3', WEBHOOK_PAUSE_MINUTES: '5', WEBHOOK_TIMEOUT_SECONDS: '120',
    });
    expect(settings).toMatchObject({ webhookConcurrency: 16, webhookConcurrencyPerOwner: 4, webhookPauseAfterFailures: 3, webhookPauseMinutes: 5, webhookClaimSeconds: 180 });
    expect(events.webhookTimeoutMs).toBe(120_000);
    // With one slot, the per-owner share defaults to it.
    expect(loadConfig({ WEBHOOK_CONCURRENCY: '1' }).settings.webhookConcurrencyPerOwner).toBe(1);
  });

  it('refuse values out of range, naming the variable', () => {
    expect(() => loadConfig({ WEBHOOK_CONCURRENCY: '0' })).toThrow(/^WEBHOOK_CONCURRENCY: /);
    expect(() => loadConfig({ WEBHOOK_CONCURRENCY: 'many' })).toThrow(/^WEBHOOK_CONCURRENCY: /);
    expect(() => loadConfig({ WEBHOOK_CONCURRENCY: '4', WEBHOOK_CONCURRENCY_PER_OWNER: '5' })).toThrow(/^WEBHOOK_CONCURRENCY_PER_OWNER: /);
    expect(() => loadConfig({ WEBHOOK_PAUSE_AFTER_FAILURES: '0' })).toThrow(/^WEBHOOK_PAUSE_AFTER_FAILURES: /);
    expect(() => loadConfig({ WEBHOOK_PAUSE_MINUTES: '1441' })).toThrow(/^WEBHOOK_PAUSE_MINUTES: /);
  });
});
