/*
 * The retry policy: when a request may be sent again, to the next process of its route or to
 * the same one on a new connection, and which connections it may use. Written once here; the
 * exchange asks these functions and does what they say.
 */
import type { BodyMode } from './forwarding';

/** HTTP methods that may be sent again when a kept connection turned out to be closed. */
export const IDEMPOTENT: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

/**
 * Whether a request may be sent twice: an idempotent method, no body, no upgrade. Only such a
 * request uses kept connections (and its connection is kept after the answer): a request that
 * could not be sent again always gets a new connection, because a kept one may be closed by a
 * stopping process at the very moment the request is written, and that request would be lost.
 */
export function mayResend(method: string, bodyless: boolean, upgrade: string | null): boolean {
  return bodyless && upgrade === null && IDEMPOTENT.has(method);
}

/** What a request does when its connection to a process closes before an answer started. */
export type AfterClose =
  /** Nothing reached the process: any request goes to the next target of its route. */
  | 'next-target'
  /** A kept connection the process had closed: the request goes again, to the same process on a new connection. */
  | 'same-target-anew'
  /** The process may have taken the request: 502. */
  | 'fail';

/** What the exchange knows when the connection to a process closes before the answer's head is complete. */
export interface ClosedBeforeAnswer {
  /** The connection was established (else it was refused or not accepted in time). */
  connected: boolean;
  /** The connection came from the pool (it had answered a request before). */
  reused: boolean;
  /** `mayResend` of the request. */
  resendable: boolean;
  /** Some bytes of an answer had arrived. */
  answerStarted: boolean;
}

/** The retry rule: whether a request whose connection closed before its answer goes to another target, again to the same, or fails. */
export function afterClose(state: ClosedBeforeAnswer): AfterClose {
  if (!state.connected) return 'next-target';
  if (state.reused && state.resendable && !state.answerStarted) return 'same-target-anew';
  return 'fail';
}

/**
 * Whether the connection to a process goes back to its pool after the answer: only one that
 * carried a request that may be sent twice (as with node's `agent: false` for the others: a
 * process being stopped would otherwise wait for it to go idle), and that neither the process
 * closes nor whose body runs until it closes.
 */
export function keepsConnection(resendable: boolean, processCloses: boolean, mode: BodyMode): boolean {
  return resendable && !processCloses && mode !== 'until-close';
}
