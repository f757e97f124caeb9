export { AcmeCertificateAuthority, validityOf, type AcmeAuthorityOptions } from './authority';
export { reasonOf } from './problems';
export { retryAfterOf } from './retry-after';
