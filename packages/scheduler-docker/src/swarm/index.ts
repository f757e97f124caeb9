/* The Swarm scheduler and the parts of it other modules and the tests use. */
export { SwarmScheduler } from './scheduler';
export type { SwarmSchedulerOptions } from './settings';
export { MEMBERS_LABEL, isRouted, serviceName, specDigest, taskTemplate, serviceSpec, jobSpec, serviceLabels, limitsOf, replicasOf, freeServiceName } from './service-spec';
export { drainScript, healthScript } from './task-scripts';
export { parseServiceLogLine } from './service-logs';
export { endpointsOf, membersOf, memberState, pairs, stateOf, taskView } from './members';
