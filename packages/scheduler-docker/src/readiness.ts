// The readiness probes and health-check URLs are shared with the process scheduler: the probes
// are the supervisor kit's, the URLs the core's. The Swarm scheduler imports them from here.
export { acceptsConnections, httpStatus } from '@svc/supervisor-node';
export { healthcheckPath, healthcheckUrl } from '@svc/core';
