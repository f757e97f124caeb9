import { createHmac } from 'node:crypto';
import type { WebhookSigner } from '@svc/core';

/** Signs webhook delivery bodies: base64 HMAC-SHA256 of the raw body with the webhook's secret. */
export class HmacWebhookSigner implements WebhookSigner {
  sign(secret: string, body: string): string {
    return createHmac('sha256', secret).update(body, 'utf8').digest('base64');
  }
}
