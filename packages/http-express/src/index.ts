export { createHttpApp, routeTable, type HttpOptions } from './app';
export { openApiDocument, openApiPath, operationKey, type RouteShape } from './openapi';
export { httpServerOptions } from './node-server';
export { limitConnections, timeoutOptions, type ConnectionLimits, type RefusalListener } from './connections';
export type { HttpLogger } from './logger';
export { BoundedLineWriter, DEFAULT_FOLLOW_BUFFER_BYTES, FOLLOW_MARKER_SOURCE, followRequested, type LineSink } from './follow';
export { UNMATCHED_ROUTE, type RequestObserver, type RequestSample } from './observe';
export type { MetricsEndpoint } from './routes/metrics';
