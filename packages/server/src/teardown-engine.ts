import { DockerScheduler, DockerSourceCompiler, createEngine, pingEngine, type Docker } from '@svc/scheduler-docker';
import type { ServerConfig } from './config';

/** What the teardown removes for a configuration: the Docker scheduler's part, the buildpack builds' part, each said in a line. */
export interface TeardownPlan {
  platform: boolean;
  builds: boolean;
  lines: string[];
}

/**
 * The Docker scheduler's part when it runs the apps (SCHEDULER=docker, or unset: picked when
 * an engine answers); the build network when buildpack builds run on the engine.
 */
export function teardownPlan(config: ServerConfig): TeardownPlan {
  const { docker, buildpacks } = config;
  const platform = config.scheduler === 'docker' || config.scheduler === 'auto';
  const builds = config.scheduler !== 'process' && config.imageBuilds !== null;
  return {
    platform,
    builds,
    lines: [
      ...(platform ? [`the containers of instance ${docker.instance}, the network ${docker.network} and its iptables guard (bridge ${docker.bridge})`] : []),
      ...(builds ? [`the build network ${buildpacks.network} and its iptables guards (bridge ${buildpacks.bridge})`] : []),
    ],
  };
}

/**
 * Takes this installation off its Docker engine (`npm run teardown`), with the controller
 * stopped: the Docker scheduler's containers of DOCKER_INSTANCE, its network and the
 * network's guard, then the build network and its guards; the rules are removed where
 * DOCKER_GUARDS says. Images, volumes and the database stay. Unless `confirmed`, it only
 * writes what it would remove.
 * @throws Error when no engine answers, or the engine or iptables refuse a removal.
 */
export async function teardownEngine(config: ServerConfig, confirmed: boolean, write: (line: string) => void): Promise<void> {
  const plan = teardownPlan(config);
  if (plan.lines.length === 0) {
    write(`Nothing to remove: SCHEDULER=${config.scheduler} runs nothing on networks of the Docker engine.`);
    return;
  }
  if (!confirmed) {
    write(['Would remove, with the controller stopped:', ...plan.lines.map((line) => `  - ${line}`), 'Run again with --yes to remove them.'].join('\n'));
    return;
  }
  const engine = createEngine(config.docker.host);
  const reason = await pingEngine(engine, 5000);
  if (reason !== null) throw new Error(`no Docker engine answers at ${config.docker.host ?? 'unix:///var/run/docker.sock'}: ${reason}`);
  if (plan.platform) {
    const removed = await dockerScheduler(config, engine).teardown();
    write(`Removed ${removed} container(s) of instance ${config.docker.instance}, the network ${config.docker.network} and its guard.`);
  }
  if (plan.builds) {
    await buildCompiler(config, engine).teardown();
    write(`Removed the build network ${config.buildpacks.network} and its guards.`);
  }
}

function dockerScheduler(config: ServerConfig, docker: Docker): DockerScheduler {
  const settings = config.docker;
  return new DockerScheduler({
    docker,
    // The teardown writes no app's log.
    logs: { append: async () => undefined },
    instance: settings.instance,
    network: settings.network,
    bridge: settings.bridge,
    guardHost: settings.guardHost,
    guards: settings.guards,
    guardImage: settings.guardImage,
  });
}

function buildCompiler(config: ServerConfig, docker: Docker): DockerSourceCompiler {
  return new DockerSourceCompiler({
    docker,
    stackImage: config.imageBuilds?.stackImage ?? config.docker.guardImage ?? '',
    dockerHost: config.docker.host,
    // A teardown makes no image: a missing stack image is named with the command that makes it.
    makeStackImage: false,
    network: config.buildpacks.network,
    bridge: config.buildpacks.bridge,
    guards: config.imageBuilds?.guards,
  });
}
