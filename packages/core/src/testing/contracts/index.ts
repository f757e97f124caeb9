/// <reference types="jest" />
import { describeUsers, describeLoginFailures, describeTokens } from './accounts';
import { describeBuilds, describeConfigs, describeContainers, describeDomains, describeReleases } from './app-resources';
import { describeApps, describePermissions } from './apps';
import { describeCertificates, describeKeys } from './credentials';
import { describeDeployLeases } from './deploys';
import { useStore, type OpenStore } from './fixtures';
import { describeUnitOfWork } from './unit-of-work';

export type { OpenedStore, OpenStore } from './fixtures';
export { describeBuildSlotStoreContract, type OpenBuildSlotStore } from './build-slots';
export { describeLogStoreContract, type OpenedLogStore, type OpenLogStore } from './log-store';
export { describeWebhookTurnsContract, type OpenWebhookStore } from './webhook-turns';
export { CONTRACT_RUN_TIMEOUT_EXIT_CODE, contractUuid, describeSchedulerContract, type OpenedScheduler, type SchedulerContractSetup, type UnrunnableBuild } from './scheduler';
export {
  CONTRACT_FAILING_COMMAND,
  CONTRACT_IDLE_COMMAND,
  CONTRACT_ROUTED_TYPES,
  SCHEDULER_SCENARIOS,
  describeSchedulerScenarios,
  releasesOf,
  type SchedulerScenario,
  type SchedulerScenarioSetup,
} from './scheduler-scenarios';

/**
 * Registers the shared contract tests of every repository port and of the unit of work
 * against the store that `open` creates; `open` is called before each test and must return
 * an empty store.
 */
export function describeRepositoryContracts(label: string, open: OpenStore): void {
  describe(`${label}: repository contracts`, () => {
    const uow = useStore(open);
    describeUsers(uow);
    describeTokens(uow);
    describeLoginFailures(uow);
    describeApps(uow);
    describeConfigs(uow);
    describeBuilds(uow);
    describeReleases(uow);
    describeContainers(uow);
    describeDomains(uow);
    describeKeys(uow);
    describePermissions(uow);
    describeCertificates(uow);
    describeDeployLeases(uow);
    describeUnitOfWork(uow);
  });
}
