/*
 * What the process and Docker schedulers share that needs Node: the readiness probes and
 * the wait until a starting container is up. The rules they follow (when a container is up,
 * the back-off, output, endpoints) are the core's (rules/supervision.ts, rules/container-output.ts).
 */
export { acceptsConnections, httpStatus } from './probes';
export { sleep, waitUntilUp, type UpWait } from './wait-until-up';
export { answerAt, answersAt, type ListeningAt } from './answers';
