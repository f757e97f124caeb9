export { InMemoryUnitOfWork, MEMORY_TRANSACTION_RETRIES } from './in-memory-unit-of-work';
export type { MemoryState, StoredLoginFailure, StoredPermission } from './memory-store';
export { FAKE_NOW, ManualClock, SeededRandom, SequentialIdGenerator } from './deterministic';
export { FakePasswordHasher, FakeSecretBox, FakeTokenGenerator } from './crypto-fakes';
export { FakePublicKeyParser, fakeFingerprint, fakePublicKey } from './fake-public-key-parser';
export {
  FAKE_CERT_EXPIRES,
  FAKE_CERT_ISSUER,
  FAKE_CERT_STARTS,
  FakeCertificateParser,
  type FakeCertificateFields,
  fakeCertificateFingerprint,
  fakeCertificatePem,
  fakePrivateKeyPem,
} from './fake-certificate-parser';
export { FakeScheduler, type RunningContainer, type SchedulerCall } from './fake-scheduler';
export { InMemoryLogStore } from './in-memory-log-store';
export { FakeImageBuilder, type FakeImage } from './fake-image-builder';
export {
  FAKE_BUILDPACKS,
  FakeBuildpackCatalog,
  FakeSourceCompiler,
  type CompileCall,
  type FakeBuildpackBehaviour,
} from './fake-source-compiler';
export { RecordingDeployObserver, type ObservedDeploy } from './recording-deploy-observer';
export {
  BUILDER_PASSWORD,
  aBuild,
  aCertificate,
  aConfig,
  aContainer,
  aDomain,
  aKey,
  aRelease,
  aToken,
  aUser,
  anApp,
} from './builders';
export * from './contracts';
export { InMemoryTlsStore } from './memory-tls-store';
