export { createHttpApp, routeTable, type HttpOptions } from './app';
export { openApiDocument, openApiPath, operationKey, type RouteShape } from './openapi';
export { httpServerOptions } from './node-server';
export type { HttpLogger } from './logger';
export { BoundedLineWriter, DEFAULT_FOLLOW_BUFFER_BYTES, FOLLOW_MARKER_SOURCE, followRequested, type LineSink } from './follow';
