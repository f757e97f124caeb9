import { createHmac } from 'node:crypto';

/** What the installation id is an HMAC of, under SECRET_KEY: fixed, so every process of one installation gets the same id. */
export const INSTALLATION_ID_MESSAGE = 'svc docker installation';

/** How many hex characters of the HMAC the id keeps: 64 bits, enough to tell installations on one engine apart. */
const INSTALLATION_ID_LENGTH = 16;

/**
 * The installation's fingerprint, from its SECRET_KEY: the first 16 hex characters of
 * HMAC-SHA256(secret, "svc docker installation"). Every controller process of one
 * installation shares SECRET_KEY (it seals the database's private keys, so it never changes),
 * two installations do not; the id tells whose an engine object is (label `svc.installation`)
 * and reveals nothing of the key.
 * @throws Error when the secret is empty.
 */
export function installationId(secret: string): string {
  if (secret.length === 0) throw new Error('The secret of an installation id must not be empty');
  return createHmac('sha256', secret).update(INSTALLATION_ID_MESSAGE, 'utf8').digest('hex').slice(0, INSTALLATION_ID_LENGTH);
}
