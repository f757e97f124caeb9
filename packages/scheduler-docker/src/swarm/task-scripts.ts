/*
 * The shell scripts a routed task runs inside its container: the drain wrapper around its
 * command, and its health check.
 */
import { healthcheckPath } from '@svc/core';

/**
 * The command every routed task runs under: its own command in the background; on SIGTERM it
 * waits the drain time (the router drops the task meanwhile), then passes SIGTERM on.
 */
export function drainScript(drainMs: number): string {
  const seconds = Math.max(0, Math.ceil(drainMs / 1000));
  return [
    '"$@" &',
    'child=$!',
    `trap 'sleep ${seconds}; kill -TERM $child 2>/dev/null' TERM`,
    'wait $child; status=$?',
    'while kill -0 $child 2>/dev/null; do wait $child; status=$?; done',
    'exit $status',
  ].join('\n');
}

/**
 * The health check of a routed task, run inside its container by the engine: HEALTHCHECK_URL
 * answered with 2xx (wget or curl in the image), else a socket listening on the port (read
 * from /proc, no tool needed but a shell and grep).
 */
export function healthScript(port: number, healthcheck: string | undefined): string {
  const asked = healthcheckPath(healthcheck);
  if (asked !== null) {
    const path = asked.replace(/'/g, '%27');
    const url = `http://127.0.0.1:${port}${path}`;
    return `if command -v wget >/dev/null 2>&1; then wget -q -T 5 -O /dev/null '${url}'; else curl -fsS -m 5 -o /dev/null '${url}'; fi`;
  }
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return `grep -qE '^ *[0-9]+: [0-9A-F]+:${hex} [0-9A-F]+:[0-9A-F]+ 0A' /proc/net/tcp /proc/net/tcp6`;
}
