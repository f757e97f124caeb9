export * from './errors';
export * from './model/entities';
export * from './model/pagination';
export * from './model/time';
export * from './ports/repositories';
export * from './ports/services';
export * from './version/policy';
