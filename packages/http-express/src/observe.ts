import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { maybeStateOf } from './state';

/** One answered request, for metrics. */
export interface RequestSample {
  method: string;
  /** The route pattern that answered (`/v1/apps/:id`), or `unmatched`: never the raw path, whose values are unbounded. */
  route: string;
  status: number;
  durationSeconds: number;
}

/** Receives one sample per request once its answer ends (or the client goes away); must return quickly. */
export type RequestObserver = (sample: RequestSample) => void;

/** The route label of requests no route matched (404s). */
export const UNMATCHED_ROUTE = 'unmatched';

/** Reports every request to `observer` when its response finishes or its connection closes. */
export function observeRequests(observer: RequestObserver): RequestHandler {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    let reported = false;
    const report = (): void => {
      if (reported) return;
      reported = true;
      try {
        observer({
          method: req.method,
          route: maybeStateOf(res)?.route ?? UNMATCHED_ROUTE,
          status: res.statusCode,
          durationSeconds: Number(process.hrtime.bigint() - started) / 1e9,
        });
      } catch {
        // Counting a request must never break answering it.
      }
    };
    res.on('finish', report);
    res.on('close', report);
    next();
  };
}
