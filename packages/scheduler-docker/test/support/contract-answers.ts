import type { UnrunnableBuild } from '@svc/core/testing';
export { answersAt } from '@svc/supervisor-node';

/** Busybox's httpd on $PORT after a delay, answering `$SVC_RELEASE <a token of this process>` (the contract's `serve`). */
export function busyboxServe(delaySeconds: number): string {
  return `sleep ${delaySeconds}; mkdir -p /tmp/contract && echo "$SVC_RELEASE $(cat /proc/sys/kernel/random/uuid)" > /tmp/contract/index.html && exec httpd -f -p "$PORT" -h /tmp/contract`;
}

/**
 * The builds the Docker and Swarm schedulers refuse before a rollback (the contract's
 * `unrunnable`): one made for the process scheduler, and an image no pull may reach (the
 * cloud's metadata address, which no setting allows; refused before the engine is asked).
 */
export const ENGINE_UNRUNNABLE: UnrunnableBuild[] = [
  {
    what: 'a build made for the process scheduler (a checkout, no image)',
    build: { image: 'contract:git-abc1234', workdir: '/srv/svc/builds/contract/abc1234' },
    reason: /^its build was made for the process scheduler/,
  },
  {
    what: 'an image no pull may reach',
    build: { image: '169.254.169.254:1/contract/absent:1' },
    reason: /^image 169\.254\.169\.254:1\/contract\/absent:1 cannot be pulled: pulls from 169\.254\.169\.254:1 are refused/,
  },
];
