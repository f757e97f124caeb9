import { CreateApp, DeleteApp, FollowLogs, GetApp, GetLogs, ListApps, RunCommand, UpdateApp } from './apps';
import {
  Authenticate,
  CancelAccount,
  ChangePassword,
  GrantAdmin,
  ListAdmins,
  ListUsers,
  Login,
  RegenerateToken,
  RegisterUser,
  RevokeAdmin,
} from './auth';
import { ListContainers, RestartContainers, RestoreContainers, ScaleApp } from './containers';
import type { CoreDependencies } from './context';
import { RecoverDeploys } from './leases';
import { CreateBuild, DeploySource, GetConfig, GetRelease, ListBuilds, ListReleases, Rollback, SetConfig } from './releases';
import {
  AddCertificate,
  AddDomain,
  AddKey,
  CertificateForServerName,
  GetCertificate,
  GrantPermission,
  ListCertificates,
  ListDomains,
  ListKeys,
  ListPermissions,
  RemoveCertificate,
  RemoveDomain,
  RemoveKey,
  RevokePermission,
} from './resources';
import { GetAppTls, HttpsRedirectFor, IssuedCertificateFor, SetAppTls } from './tls';
import { AuthenticateKey, AuthorizeGitAccess, ListRetainedWorkdirs } from './sources';
import { CheckBuilds } from './build-readiness';
import { FollowEvents, ListAppEvents, ListEvents, PruneJournal } from './events';
import { CreateWebhook, DeleteWebhook, GetWebhook, ListDeliveries, ListWebhooks } from './webhooks';
import { DeliverWebhooks } from './webhook-delivery';
import { FinishIdempotentRequest, StartIdempotentRequest } from './idempotency';

export * from './acme-renewal';
export * from './apps';
export * from './auth';
export * from './buildpacks';
export * from './build-readiness';
export * from './containers';
export * from './context';
export * from './deploy';
export * from './leases';
export * from './observe';
export * from './releases';
export * from './rollback-checks';
export * from './quotas';
export * from './release-phase';
export * from './resources';
export * from './scheduler-failure';
export * from './sources';
export * from './tls';
export * from './journal';
export * from './events';
export * from './webhooks';
export * from './webhook-delivery';
export * from './idempotency';

/** Every use case of the controller, by name. */
export const USE_CASES = {
  registerUser: RegisterUser,
  login: Login,
  authenticate: Authenticate,
  cancelAccount: CancelAccount,
  regenerateToken: RegenerateToken,
  changePassword: ChangePassword,
  listUsers: ListUsers,
  listAdmins: ListAdmins,
  grantAdmin: GrantAdmin,
  revokeAdmin: RevokeAdmin,
  createApp: CreateApp,
  listApps: ListApps,
  getApp: GetApp,
  updateApp: UpdateApp,
  deleteApp: DeleteApp,
  getLogs: GetLogs,
  followLogs: FollowLogs,
  runCommand: RunCommand,
  listContainers: ListContainers,
  scaleApp: ScaleApp,
  restartContainers: RestartContainers,
  restoreContainers: RestoreContainers,
  recoverDeploys: RecoverDeploys,
  getConfig: GetConfig,
  setConfig: SetConfig,
  listBuilds: ListBuilds,
  createBuild: CreateBuild,
  listReleases: ListReleases,
  getRelease: GetRelease,
  rollback: Rollback,
  listDomains: ListDomains,
  addDomain: AddDomain,
  removeDomain: RemoveDomain,
  listKeys: ListKeys,
  addKey: AddKey,
  removeKey: RemoveKey,
  listPermissions: ListPermissions,
  grantPermission: GrantPermission,
  revokePermission: RevokePermission,
  listCertificates: ListCertificates,
  getCertificate: GetCertificate,
  addCertificate: AddCertificate,
  removeCertificate: RemoveCertificate,
  certificateForServerName: CertificateForServerName,
  authenticateKey: AuthenticateKey,
  authorizeGitAccess: AuthorizeGitAccess,
  deploySource: DeploySource,
  checkBuilds: CheckBuilds,
  listRetainedWorkdirs: ListRetainedWorkdirs,
  getAppTls: GetAppTls,
  setAppTls: SetAppTls,
  issuedCertificateFor: IssuedCertificateFor,
  httpsRedirectFor: HttpsRedirectFor,
  listEvents: ListEvents,
  listAppEvents: ListAppEvents,
  followEvents: FollowEvents,
  pruneJournal: PruneJournal,
  createWebhook: CreateWebhook,
  listWebhooks: ListWebhooks,
  getWebhook: GetWebhook,
  deleteWebhook: DeleteWebhook,
  listDeliveries: ListDeliveries,
  deliverWebhooks: DeliverWebhooks,
  startIdempotentRequest: StartIdempotentRequest,
  finishIdempotentRequest: FinishIdempotentRequest,
} as const;

/** The use cases, instantiated. */
export type UseCases = { readonly [K in keyof typeof USE_CASES]: InstanceType<(typeof USE_CASES)[K]> };

/** Builds every use case from one set of ports: the way to embed the core in another service. */
export function createUseCases(deps: CoreDependencies): UseCases {
  const entries = Object.entries(USE_CASES).map(([name, UseCase]) => [name, new UseCase(deps)]);
  return Object.freeze(Object.fromEntries(entries)) as UseCases;
}
