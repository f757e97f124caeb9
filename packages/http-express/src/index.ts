export { createHttpApp, type HttpOptions } from './app';
export type { HttpLogger } from './logger';
