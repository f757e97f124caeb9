export { AppRouter, type AppRouterOptions, type RouterLimits, type UpstreamPoolOptions } from './router';
export { SecureContextCache, type SecureContextCacheOptions } from './certificates';
export { ROUTES_PER_MESSAGE, RouterCluster, type RouterClusterOptions } from './cluster';
export type { LogLevel } from './protocol';
export { RouteCache, type RouteCacheOptions, type RouteEntry, type RouteSnapshot } from './route-cache';
export { ConnectionLimiter } from './limits';
export { hostNameOf, wildcardOf } from './host';
export { CHALLENGE_PREFIX, challengeToken, httpsLocation } from './challenge';
export type { CertificateStore, ChallengeStore, RequestObserver, ResolvedRoute, RouteTable, RouteTarget, RouterLogger, ServedCertificate } from './ports';
