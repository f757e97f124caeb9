/*
 * The Docker Engine adapter: a scheduler running each container of a release as an engine
 * container, a scheduler running each process type as a Swarm service, and an image builder
 * for git pushes, sharing one engine client, its labels and its log demultiplexing.
 */
export { APP_LABEL, APP_UID, APP_UUID_LABEL, DockerImageBuilder, type DockerImageBuilderOptions } from './image-builder';
export { UnreadableReference, imageReferences, readDockerfile } from './dockerfile-references';
export { DEFAULT_CONTAINER_PORT, ImageNotFound } from './images';
export {
  DockerScheduler,
  RUN_TIMEOUT_EXIT_CODE,
  containerName,
  type DockerSchedulerOptions,
  type Endpoint,
} from './docker-scheduler';
export {
  DEFAULT_DOCKER_HOST,
  FrameDemultiplexer,
  LABELS,
  LAST_OUTPUT_LINES,
  OutputTail,
  lastOutputNote,
  SHARES_PER_CPU,
  createEngine,
  dockerHostOptions,
  engineReason,
  engineStatus,
  nanoCpusForShares,
  pingEngine,
} from './engine';
export type { EngineSchedulerOptions } from './options';
export { DOCKER_INSTANCE_FIX, InstanceOfAnotherInstallation, foreignInstanceProblem, isForeign, isOwnedBy, ownerLabels, type LabelledObject, type Owner } from './installation';
export { SCHEDULER_LOG_SOURCE } from '@svc/core';
export type { RegistryLogin } from './registry-login';
export { MEMBERS_LABEL, SwarmScheduler, drainScript, healthScript, parseServiceLogLine, type SwarmSchedulerOptions } from './swarm';
export { guardChainName, guardHostFromBridge, hostGuardSteps, hostUnguardSteps, unguardHostFromBridge } from './host-guard';
export { LocalIptables, applySteps, failureOf, iptablesScript, localIptables, outcomesOf, type GuardRunnerChoice, type IptablesOutcome, type IptablesRunner, type IptablesStep } from './iptables-runner';
export { EngineIptables, guardRunner, helperContainerSpec, type GuardRunnerOptions } from './iptables-engine';
export { DEFAULT_GUARD_IMAGE, type PlatformNetworkOptions } from './platform-network';
/** The engine client type (dockerode's), for those that share one. */
export type { default as Docker } from 'dockerode';
export { COMPILE_CONTAINER_PREFIX, DockerSourceCompiler, cacheVolumeName, type DockerSourceCompilerOptions } from './source-compiler';
export { COMPILE_PATHS } from './compile-session';
export { BLOCKED_RANGES, BUILD_BRIDGE, BUILD_NETWORK, buildGuardSteps, buildUnguardSteps, egressChainName, egressRules, ipv4Nameservers, unguardBuildBridge } from './build-network';
export { STACK_IMAGE_SCRIPT, checkStackImage, stackImageCommand, type StackImageCheck, type StackImageSource } from './stack-image';
export { UNCONFINED_ENGINE, assertEngineConfinesBuilds, confinesRoot, engineConfinesBuilds } from './build-checks';
export { isImageIdReference, refusalOf } from './image-references';
export { RefusedRegistry, assertPublicRegistry, isPrivateAddress } from './registry-hosts';
export { containerUserFor } from './container-user';
export { DEFAULT_LOG_LIMIT, logConfigOf, type LogLimit } from './options';
