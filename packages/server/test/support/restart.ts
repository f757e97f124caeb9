import { readFile, readdir } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { startController, type ControllerProcess } from '../processes/controller-process';
import { call, callUntil, registerAndLogin } from '../processes/http';
import { startRouter, type RouterProcess } from '../processes/router-process';
import type { WorkspaceBuild } from '../processes/workspace-build';

/*
 * A controller restarted under load behind a router process of its own: the clients, the
 * restart itself, and the process scheduler's records of what a controller leaves running
 * (controller-restart.e2e.spec.ts and controller-restart-docker.e2e.spec.ts).
 */

/** Client connections kept busy through the router during the restart. */
const CONNECTIONS = 64;

/** What the clients saw: answers by status (0: no answer at all), and the bodies of the 200s. */
export interface Load {
  statuses: Map<number, number>;
  bodies: Set<string>;
  failures: string[];
  stop(): Promise<void>;
}

/** Keeps `CONNECTIONS` clients sending GETs through the router to `host`, one after the other each, over kept-alive connections. */
function keepLoading(port: number, host: string): Load {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const load: Load = { statuses: new Map(), bodies: new Set(), failures: [], stop: async () => undefined };
  let running = true;
  const once = (): Promise<void> =>
    new Promise((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/', headers: { Host: host }, agent }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          load.statuses.set(status, (load.statuses.get(status) ?? 0) + 1);
          if (status === 200) load.bodies.add(text.trim());
          else if (load.failures.length < 20) load.failures.push(`${status} ${text.trim()}`);
          resolve();
        });
        res.on('error', (error) => {
          load.statuses.set(0, (load.statuses.get(0) ?? 0) + 1);
          if (load.failures.length < 20) load.failures.push(error.message);
          resolve();
        });
      });
      req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
      req.on('error', (error) => {
        load.statuses.set(0, (load.statuses.get(0) ?? 0) + 1);
        if (load.failures.length < 20) load.failures.push(error.message);
        resolve();
      });
      req.end();
    });
  const clients = Array.from({ length: CONNECTIONS }, async () => {
    while (running) await once();
  });
  load.stop = async () => {
    running = false;
    await Promise.all(clients);
    agent.destroy();
  };
  return load;
}

export const answered = (load: Load): number => load.statuses.get(200) ?? 0;
export const failed = (load: Load): number => [...load.statuses].filter(([status]) => status !== 200).reduce((sum, [, n]) => sum + n, 0);
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One app answering through a router process while its controller is stopped (SIGTERM) and started again on the same data. */
export interface RestartCase {
  /** The controller's environment (DATA_DIR, ROUTER_SOCKET and the scheduler's settings). */
  env: Record<string, string>;
  /** Deploys the app and resolves once the router answers 200 for it. */
  deploy: (api: { url: string; token: string }, app: string) => Promise<void>;
  /** Runs while no controller runs (the old one stopped, the new one not started). */
  whileDown?: () => Promise<void>;
  /** Runs once the new controller listens, before the app is deleted (the new controller's API). */
  afterRestart?: (api: { url: string; token: string }) => Promise<void>;
}

/**
 * Starts the router and a controller, deploys, keeps `CONNECTIONS` clients busy, stops the
 * controller with SIGTERM and starts another on the same data, keeps the clients going a
 * little, then deletes the app (its processes or containers go) and stops both processes.
 */
export async function restartUnderLoad(build: WorkspaceBuild, setup: RestartCase, label: string): Promise<{ load: Load; restartMs: number; bodiesBefore: Set<string>; log: string }> {
  const app = `restart-${process.pid.toString(36)}`;
  let router: RouterProcess | null = null;
  let controller: ControllerProcess | null = null;
  try {
    router = await startRouter(build, { ...setup.env, ROUTER_WORKERS: '2' });
    controller = await startController(build, { env: setup.env });
    const token = await registerAndLogin(controller.url, 'alice');
    expect((await call(controller.url, 'POST', '/v1/apps/', token, { id: app })).status).toBe(201);
    await setup.deploy({ url: controller.url, token }, app);
    const host = `${app}.localhost`;
    const ready = await callUntil(() => routerGet(router as RouterProcess, host), (reply) => reply.status === 200, 30_000);
    expect(ready).toMatchObject({ status: 200 });

    const load = keepLoading(router.port, host);
    await pause(1000);
    const bodiesBefore = new Set(load.bodies);
    const stoppedAt = Date.now();
    const answeredBefore = answered(load);
    await controller.stop(30_000);
    const exitedAt = Date.now();
    await setup.whileDown?.();
    controller = await startController(build, { env: setup.env, startTimeoutMs: 120_000 });
    const restartMs = Date.now() - stoppedAt;
    const answeredDuring = answered(load) - answeredBefore;
    const failedDuring = failed(load);
    // Requests keep going through the handover to what the new controller started or adopted.
    await pause(2000);
    await load.stop();
    process.stdout.write(
      `controller restart (${label}), ${CONNECTIONS} connections: during the restart ${answeredDuring} requests answered, ${failedDuring} failed; ` +
        `in all ${answered(load)} answered, ${failed(load)} failed; SIGTERM to listening again ${restartMs} ms ` +
        `(old controller stopped in ${exitedAt - stoppedAt} ms, new one listening ${restartMs - (exitedAt - stoppedAt)} ms later)\n`,
    );
    const second = await registerAndLoginAgain(controller.url);
    const log = (await call(controller.url, 'GET', `/v1/apps/${app}/logs/?log_lines=10000`, second)).body as string;
    await setup.afterRestart?.({ url: controller.url, token: second });
    expect((await call(controller.url, 'DELETE', `/v1/apps/${app}/`, second)).status).toBeLessThan(300);
    return { load, restartMs, bodiesBefore, log };
  } finally {
    await controller?.stop(30_000);
    await router?.stop();
    // The controller leaves the apps' processes running for the next one: none may outlive the test.
    await killRecordedGroups(setup.env.DATA_DIR as string);
  }
}

/** Kills the process groups the process scheduler recorded under the data directory (those a failed test left). */
export async function killRecordedGroups(dataDir: string): Promise<void> {
  const directory = join(dataDir, 'processes');
  const names = await readdir(directory).catch(() => [] as string[]);
  for (const name of names) {
    try {
      const { pid, sandbox } = JSON.parse(await readFile(join(directory, name), 'utf8')) as { pid: number; sandbox?: { init: number } };
      // A sandbox's processes may have left the group, never its PID namespace, which ends with its init.
      if (sandbox !== undefined) process.kill(sandbox.init, 'SIGKILL');
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

/** The records the process scheduler keeps of its running process groups (records.ts). */
export async function recordedGroups(dataDir: string): Promise<Array<{ id: string; app: string; name: string; pid: number; sandbox?: { init: number }; cgroups?: string[] }>> {
  const directory = join(dataDir, 'processes');
  const names = await readdir(directory).catch(() => [] as string[]);
  return Promise.all(names.map(async (name) => JSON.parse(await readFile(join(directory, name), 'utf8')) as { id: string; app: string; name: string; pid: number }));
}

/** Logs alice in on the new controller (the same database). */
async function registerAndLoginAgain(url: string): Promise<string> {
  const login = await call(url, 'POST', '/v1/auth/login', null, { username: 'alice', password: 'correct horse battery staple' });
  return (login.body as { token: string }).token;
}

/** A GET of the router's root for `host` (the app's host name). */
function routerGet(router: RouterProcess, host: string): Promise<{ status: number; release: string | null; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: router.port, path: '/', headers: { Host: host }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, release: null, body: text }));
    });
    req.on('error', reject);
    req.end();
  });
}
