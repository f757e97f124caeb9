import { Conflict, IdempotencyKeyReused, ValidationFailed } from '../errors';
import type { StoredResponse } from '../model/events';
import type { SecretBox } from '../ports/services';
import type { CoreDependencies } from './context';

/** What to do with a request made with an `Idempotency-Key`. */
export type IdempotentStart =
  /** The first request with the key: run it, then `finish` (or `forget`) it. */
  | { kind: 'first' }
  /** A repeat of a finished request: answer with the stored response. */
  | { kind: 'replay'; response: StoredResponse };

const KEY_MAX = 255;

/** @throws ValidationFailed for an empty key, a longer one than 255 characters, or one with control characters. */
export function checkIdempotencyKey(key: string): string {
  if (key.length === 0 || key.length > KEY_MAX || [...key].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    throw ValidationFailed.field('Idempotency-Key', `Expected 1 to ${KEY_MAX} printable characters.`);
  }
  return key;
}

/**
 * Requests made with an `Idempotency-Key` are done once per user and key: a repeat with the
 * same fingerprint (method, path and body) gets the first answer again; another request with
 * the key is refused; a repeat while the first still runs is a conflict. The store is shared
 * by every controller process. Stored bodies are sealed with the SecretBox (they may hold a
 * new token or a webhook's secret); one that cannot be opened (the server secret changed)
 * is forgotten, as an expired one is.
 */
export class StartIdempotentRequest {
  constructor(private readonly deps: Pick<CoreDependencies, 'idempotency' | 'clock' | 'settings' | 'secrets'>) {}

  /** How long a first request may still be running: the longest a request may take (a one-off run) and five minutes more. */
  private abandonedAfterMs(): number {
    return (this.deps.settings.runTimeoutSeconds + 300) * 1000;
  }

  /**
   * Null when this controller keeps no idempotent requests (the key is then ignored).
   * @throws ValidationFailed (a bad key), IdempotencyKeyReused (422), Conflict IDEMPOTENCY.IN_PROGRESS (409).
   */
  async execute(username: string, key: string, fingerprint: string): Promise<IdempotentStart | null> {
    const store = this.deps.idempotency;
    if (!store) return null;
    checkIdempotencyKey(key);
    const now = this.deps.clock.now();
    for (let attempt = 0; attempt < 2; attempt++) {
      const existing = await store.begin({ username, key, fingerprint, response: null, created: now });
      if (existing === null) return { kind: 'first' };
      const expired = existing.created.getTime() + this.deps.settings.idempotencyRetentionHours * 3_600_000 <= now.getTime();
      if (expired) {
        // Kept past its time (pruning runs now and then): the key is free again.
        await store.forget(username, key);
        continue;
      }
      if (existing.fingerprint !== fingerprint) throw new IdempotencyKeyReused();
      if (existing.response === null && existing.created.getTime() + this.abandonedAfterMs() <= now.getTime()) {
        // Running for longer than any request may: its process died with it, and it changed nothing it could answer for.
        await store.forget(username, key);
        continue;
      }
      if (existing.response === null) {
        throw new Conflict('IDEMPOTENCY.IN_PROGRESS', 'A request with this Idempotency-Key is still being processed; retry later.');
      }
      const response = openAnswer(this.deps.secrets, existing.response);
      if (response === null) {
        await store.forget(username, key);
        continue;
      }
      return { kind: 'replay', response };
    }
    throw new Conflict('IDEMPOTENCY.IN_PROGRESS', 'A request with this Idempotency-Key is still being processed; retry later.');
  }
}

/** Stores the answer of the first request with a key, or forgets the key when the answer must not be replayed. */
export class FinishIdempotentRequest {
  constructor(private readonly deps: Pick<CoreDependencies, 'idempotency' | 'secrets'>) {}

  /**
   * Answers of 5xx are not kept (a retry may succeed where the first failed, and the failed
   * request changed nothing); every other answer is kept for repeats, its body sealed.
   */
  async execute(username: string, key: string, response: StoredResponse): Promise<void> {
    const store = this.deps.idempotency;
    if (!store) return;
    if (response.status >= 500) await store.forget(username, key);
    else await store.finish(username, key, sealAnswer(this.deps.secrets, response));
  }
}

/*
 * The body is what may carry a secret (the token of `POST /v1/auth/tokens/`, a new webhook's
 * secret), so it is kept sealed: a stolen database holds no usable token. The status and
 * headers (content type, location, tags) carry none and stay readable.
 */
function sealAnswer(secrets: SecretBox, response: StoredResponse): StoredResponse {
  return { status: response.status, headers: response.headers, body: secrets.seal(response.body) };
}

function openAnswer(secrets: SecretBox, stored: StoredResponse): StoredResponse | null {
  try {
    return { status: stored.status, headers: stored.headers, body: secrets.open(stored.body) };
  } catch {
    return null;
  }
}
