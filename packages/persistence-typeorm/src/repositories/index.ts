import type { Repositories } from '@svc/core';
import type { Session } from '../session';
import { TypeOrmLoginFailureRepository, TypeOrmTokenRepository, TypeOrmUserRepository } from './accounts';
import {
  TypeOrmBuildRepository,
  TypeOrmConfigRepository,
  TypeOrmContainerRepository,
  TypeOrmDomainRepository,
  TypeOrmReleaseRepository,
} from './app-resources';
import { TypeOrmAppRepository, TypeOrmPermissionRepository } from './apps';
import { TypeOrmCertificateRepository, TypeOrmKeyRepository } from './credentials';
import { TypeOrmDeployLeaseRepository } from './deploys';
import { TypeOrmEventRepository } from './events';
import { TypeOrmDeliveryRepository, TypeOrmWebhookRepository } from './webhooks';

/** Every repository, bound to `session`. */
export function createRepositories(session: Session): Repositories {
  return {
    users: new TypeOrmUserRepository(session),
    tokens: new TypeOrmTokenRepository(session),
    loginFailures: new TypeOrmLoginFailureRepository(session),
    apps: new TypeOrmAppRepository(session),
    configs: new TypeOrmConfigRepository(session),
    builds: new TypeOrmBuildRepository(session),
    releases: new TypeOrmReleaseRepository(session),
    containers: new TypeOrmContainerRepository(session),
    domains: new TypeOrmDomainRepository(session),
    keys: new TypeOrmKeyRepository(session),
    permissions: new TypeOrmPermissionRepository(session),
    certificates: new TypeOrmCertificateRepository(session),
    deploys: new TypeOrmDeployLeaseRepository(session),
    events: new TypeOrmEventRepository(session),
    webhooks: new TypeOrmWebhookRepository(session),
    deliveries: new TypeOrmDeliveryRepository(session),
  };
}
