export { loadConfig, ConfigError, type ServerConfig, type SchedulerKind } from './config';
export { compose, SERVER_TOKENS, type CompositionOptions, type DatabaseHandle } from './composition';
export { startServer, platformVersion, resolveSecretKey, type RunningServer } from './server';
