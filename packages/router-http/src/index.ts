export { AppRouter, type AppRouterOptions } from './router';
export { SecureContextCache, type SecureContextCacheOptions } from './certificates';
export { hostNameOf, wildcardOf } from './host';
export type { CertificateStore, ResolvedRoute, RouteTable, RouteTarget, RouterLogger, ServedCertificate } from './ports';
