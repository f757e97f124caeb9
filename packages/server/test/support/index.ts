export * from './backend';
export * from './client';
export * from './server';
export * from './users';
export * from './types';
export * from './expectations';
export * from './router';
export * from './swarm';
