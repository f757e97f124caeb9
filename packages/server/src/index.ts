export { loadConfig, ConfigError, type ServerConfig, type SchedulerKind } from './config';
export { compose, SERVER_TOKENS, type CompositionOptions, type DatabaseHandle, type DockerSchedulerSetup } from './composition';
export { pickScheduler, startServer, platformVersion, resolveSecretKey, type RunningServer } from './server';
export { PlatformRouteTable, type PlatformRouteTableOptions } from './routing';
