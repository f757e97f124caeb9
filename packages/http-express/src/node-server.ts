import { IncomingMessage, ServerResponse, type ServerOptions } from 'node:http';
import type { Application } from 'express';

/** The prototypes Express gives every request and response; its types do not declare them. */
interface ExpressPrototypes {
  request: object;
  response: object;
}

/** Gives `derived.prototype` the properties and the prototype of `prototype`. */
function adopt(derived: { prototype: object }, prototype: object): void {
  Object.setPrototypeOf(derived.prototype, Object.getPrototypeOf(prototype) as object);
  Object.defineProperties(derived.prototype, Object.getOwnPropertyDescriptors(prototype));
}

/**
 * Options for node:http's `createServer(options, app)` under which Node creates each request
 * and response with the Express application's own prototypes from the start.
 *
 * Express otherwise swaps the prototype of every request and response it receives
 * (`Object.setPrototypeOf(req, app.request)`), which makes V8 drop the optimised shapes of
 * both objects and of the code that touches them: measured, that cost more per request
 * than all of the controller's own work on a cached read. Here the application's request
 * and response prototypes become those of two subclasses of Node's classes (with the same
 * properties and the same Express prototypes behind them), so that the swap finds the
 * prototype already in place and does nothing.
 */
export function httpServerOptions(app: Application): ServerOptions {
  const prototypes = app as unknown as ExpressPrototypes;
  class ExpressRequest extends IncomingMessage {}
  class ExpressResponse extends ServerResponse {}
  adopt(ExpressRequest, prototypes.request);
  adopt(ExpressResponse, prototypes.response);
  prototypes.request = ExpressRequest.prototype;
  prototypes.response = ExpressResponse.prototype;
  return { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse as typeof ServerResponse };
}
