import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import type { ContainerSpec, RunSpec } from '@svc/core';
import { BUSYBOX } from './engine';

/** What a test file starts: app names of its own, and container and one-off specs for them. */
export interface TestSpecs {
  /** A new app name, `<prefix>-<pid>-<n>`: the prefix keeps one file's apps apart from another's. */
  newApp(): string;
  /** A busybox web container answering over httpd on $PORT, for a new app unless `app` is given. */
  spec(overrides?: Partial<ContainerSpec>): ContainerSpec;
  /** A one-off busybox command, for a new app unless `app` is given. */
  runSpec(command: string, overrides?: Partial<RunSpec>): RunSpec;
}

/** The specs of one test file, its app names starting with `prefix`. */
export function testSpecs(prefix: string): TestSpecs {
  let app = 0;
  const newApp = (): string => `${prefix}-${process.pid.toString(36)}-${++app}`;
  return {
    newApp,
    spec(overrides = {}) {
      const id = randomUUID();
      const appId = overrides.app ?? newApp();
      return {
        id,
        app: appId,
        type: 'web',
        num: 1,
        release: 1,
        image: BUSYBOX,
        command: 'echo "hello from $SVC_APP"; exec httpd -f -p "$PORT" -h /etc',
        workdir: null,
        env: { SVC_APP: appId, SVC_RELEASE: '1', GREETING: 'hi there' },
        memory: null,
        cpu: null,
        ...overrides,
      };
    },
    runSpec(command, overrides = {}) {
      const appId = overrides.app ?? newApp();
      return {
        app: appId,
        release: 1,
        image: BUSYBOX,
        workdir: null,
        command,
        env: { SVC_APP: appId, SVC_RELEASE: '1' },
        timeoutSeconds: 30,
        outputLimitBytes: 64 * 1024,
        ...overrides,
      };
    },
  };
}

/** A plain HTTP GET of a container's endpoint. */
export function get(host: string, port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', reject);
    req.end();
  });
}
