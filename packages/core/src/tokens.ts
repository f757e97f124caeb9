/**
 * Identifiers of the ports, for a composition root that wires them by token. Plain symbols:
 * the core itself knows no dependency-injection library.
 */
export const TOKENS = Object.freeze({
  UnitOfWork: Symbol.for('svc.UnitOfWork'),
  Scheduler: Symbol.for('svc.Scheduler'),
  LogStore: Symbol.for('svc.LogStore'),
  PublicKeyParser: Symbol.for('svc.PublicKeyParser'),
  CertificateParser: Symbol.for('svc.CertificateParser'),
  PasswordHasher: Symbol.for('svc.PasswordHasher'),
  TokenGenerator: Symbol.for('svc.TokenGenerator'),
  SecretBox: Symbol.for('svc.SecretBox'),
  Clock: Symbol.for('svc.Clock'),
  IdGenerator: Symbol.for('svc.IdGenerator'),
  RandomSource: Symbol.for('svc.RandomSource'),
  Settings: Symbol.for('svc.Settings'),
  ImageBuilder: Symbol.for('svc.ImageBuilder'),
  SourceCompiler: Symbol.for('svc.SourceCompiler'),
  BuildpackCatalog: Symbol.for('svc.BuildpackCatalog'),
  CoreDependencies: Symbol.for('svc.CoreDependencies'),
  UseCases: Symbol.for('svc.UseCases'),
});
