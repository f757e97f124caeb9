export { answersAt } from '@svc/supervisor-node';

/** Busybox's httpd on $PORT after a delay, answering `$SVC_RELEASE <a token of this process>` (the contract's `serve`). */
export function busyboxServe(delaySeconds: number): string {
  return `sleep ${delaySeconds}; mkdir -p /tmp/contract && echo "$SVC_RELEASE $(cat /proc/sys/kernel/random/uuid)" > /tmp/contract/index.html && exec httpd -f -p "$PORT" -h /tmp/contract`;
}
