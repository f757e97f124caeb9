import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Middleware that runs `handlers` one after the other as a single layer, as Express would
 * run them as consecutive layers: each passes control with `next()`, an error given to
 * `next` or thrown goes on to Express's error handling, and a handler that answers simply
 * does not call `next`. Every layer Express walks costs about as much as these handlers
 * themselves, and every request walks them all.
 */
export function inSequence(...handlers: readonly RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction): void => {
    let index = 0;
    const step = (error?: unknown): void => {
      if (error !== undefined && error !== null) {
        next(error);
        return;
      }
      const handler = handlers[index++];
      if (handler === undefined) {
        next();
        return;
      }
      try {
        void handler(req, res, step as NextFunction);
      } catch (thrown) {
        next(thrown);
      }
    };
    step();
  };
}
