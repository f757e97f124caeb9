/*
 * The part of autocannon's API the benchmark uses (the package ships no type definitions).
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
      /** Requests in all; overrides duration. */
      amount?: number;
      pipelining?: number;
      /** Seconds. */
      timeout?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      /** Replaces `[<id>]` in the body with a unique id per request. */
      idReplacement?: boolean;
      /** The TLS server name sent (SNI) for `https:` URLs. */
      servername?: string;
      /** Requests made in turn on each connection; setupRequest may change each one before it is sent. */
      requests?: Array<{ setupRequest?: (request: { headers?: Record<string, string> } & Record<string, unknown>) => Record<string, unknown> }>;
    }

    interface Result {
      errors: number;
      timeouts: number;
      non2xx: number;
      '2xx': number;
      start: Date;
      finish: Date;
      statusCodeStats: Record<string, { count: number }>;
    }

    interface Instance extends EventEmitter {
      stop(): void;
    }
  }

  function autocannon(
    options: autocannon.Options,
    callback: (error: Error | null, result: autocannon.Result) => void,
  ): autocannon.Instance;

  export = autocannon;
}
