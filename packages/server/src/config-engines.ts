import { dockerHostOptions, type GuardRunnerChoice, type RegistryLogin } from '@svc/scheduler-docker';
import { ConfigError, flag, integer, oneOf, text, type Env } from './config-values';

/** How the Docker scheduler runs apps (SCHEDULER=docker, or picked when SCHEDULER is unset). */
export interface DockerSettings {
  /** DOCKER_HOST: the engine's address; null for the default `unix:///var/run/docker.sock`. */
  host: string | null;
  /** DOCKER_NETWORK: the platform's own network every container joins. */
  network: string;
  /** DOCKER_BRIDGE: the Linux bridge of that network when the scheduler creates it. */
  bridge: string;
  /** DOCKER_INSTANCE: this controller's name on the engine (containers of other names are left alone). */
  instance: string;
  /** DOCKER_USER: `uid[:gid]` containers run as. */
  user: string;
  /** DOCKER_PIDS_LIMIT: most processes in one container. */
  pidsLimit: number;
  /** DOCKER_READONLY_ROOTFS: the image's file system read-only, with a writable /tmp. */
  readonlyRootfs: boolean;
  /** DOCKER_PULL_POLICY: `missing` (pull images the engine lacks) or `always` (once per release). */
  pullPolicy: 'missing' | 'always';
  /** DOCKER_HOST_GUARD: install the iptables rules that keep containers away from this host's services. */
  guardHost: boolean;
  /** DOCKER_GUARDS: where the networks' iptables guards are installed from: this machine's iptables (`local`), a helper container on the engine (`engine`), or `auto`. */
  guards?: GuardRunnerChoice;
  /** STACK_IMAGE: the image of that helper container. */
  guardImage?: string;
  /** DOCKER_DEFAULT_MEMORY: the memory limit of containers whose app sets none, and of `run`; null for none. */
  defaultMemory: string | null;
  /** REGISTRY_ALLOW: registries on this host or a private network tenants' images may be pulled from (REGISTRY always may). */
  registryAllow?: string[];
  /** DOCKER_LOG_MAX_SIZE and DOCKER_LOG_MAX_FILE: the engine's log of each container, `max-size` per file and files kept. */
  logLimit?: { maxSize: string; maxFiles: number };
  /** DOCKER_DEFAULT_CPU: the CPU limit (1024 = one CPU) of containers whose app sets none, and of `run`; null for none. */
  defaultCpu: number | null;
}

/**
 * How the Swarm scheduler runs apps (SCHEDULER=swarm), besides the DOCKER_* settings it shares
 * with the Docker scheduler (DOCKER_HOST names a manager of the swarm).
 */
export interface SwarmSettings {
  /** SWARM_SERVICE_PREFIX: services are named `<prefix>-<app>-<type>`. */
  prefix: string;
  /** SWARM_DRAIN_SECONDS, in ms: how long a replaced web task keeps serving while the router drops it. */
  drainMs: number;
  /** SWARM_HEALTH_INTERVAL_SECONDS, in ms: how often the health check of a web task runs. */
  healthIntervalMs: number;
  /** SWARM_UPDATE_MONITOR_SECONDS, in ms: how long Swarm watches each updated task for a failure. */
  monitorMs: number;
  /** SWARM_UPDATE_TIMEOUT_SECONDS, in ms: the longest rolling update or rollback of one service. */
  updateTimeoutMs: number;
  /** SWARM_NODE_ADDRESSES: the address the router uses for a node, by node hostname or id (others: the node's own). */
  nodeAddresses: Record<string, string>;
  /** SWARM_NETWORK: the swarm-scoped bridge network (inter-container communication off) every task joins; null: the nodes' default bridge. */
  network: string | null;
}


/** How pushed commits are built into images (`IMAGE_BUILDER=docker`). */
export interface ImageBuildSettings {
  /** STACK_IMAGE: the image a Procfile-only commit is laid onto. */
  stackImage: string;
  /** BUILD_TIMEOUT_SECONDS, in milliseconds. */
  timeoutMs: number;
  /** BUILD_MEMORY_MB, in bytes: memory of each build step (no swap). */
  memoryBytes: number;
  /** BUILD_CPU_SHARES: CPU shares of each build step. */
  cpuShares: number;
  /** BUILD_CONTEXT_LIMIT_MB, in bytes: the largest checkout a build sends to the engine. */
  contextLimitBytes: number;
  /** BUILD_NETWORK: the network build steps run in. */
  network: string;
  /** REGISTRY: where each build is pushed and pulled from by digest (`host[:port][/path]`); null: builds stay in the engine. */
  registry: string | null;
  /** BUILD_IMAGE_LIMIT_MB, in bytes: the largest image a build may make. */
  imageLimitBytes: number;
  /** BUILD_PIDS_LIMIT: most processes of a Dockerfile build's steps at once. */
  pidsLimit: number;
  /** DOCKER_GUARDS: where the build network's iptables guards are installed from (see DockerSettings). */
  guards?: GuardRunnerChoice;
}

const IMAGE_REFERENCE = /^[a-z0-9]+([._/-][a-z0-9]+)*(:[0-9]{1,5}\/[a-z0-9]+([._/-][a-z0-9]+)*)?(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$/;

/**
 * `IMAGE_BUILDER`: `docker` builds every pushed commit into an image (the default with the
 * Docker scheduler), `none` runs it from its checkout (what the process scheduler needs).
 */
export function imageBuilds(env: Env, registry: string | null): ImageBuildSettings | null {
  const scheduler = text(env, 'SCHEDULER', 'auto');
  const fallback = scheduler === 'docker' || scheduler === 'swarm' || scheduler === 'auto' ? 'docker' : 'none';
  const chosen = oneOf(env, 'IMAGE_BUILDER', fallback, ['docker', 'none'] as const);
  if (chosen === 'none') return null;
  // The nodes of a swarm run what they pull: a build only on the controller's engine would not start elsewhere.
  if (scheduler === 'swarm' && text(env, 'REGISTRY', '') === '') {
    throw new ConfigError('REGISTRY', 'must be set with SCHEDULER=swarm and image builds: every node pulls the built images from it (host:port of a registry they all reach), or set IMAGE_BUILDER=none');
  }
  if (scheduler === 'process') {
    throw new ConfigError('IMAGE_BUILDER', 'cannot be docker with SCHEDULER=process: the process scheduler runs checkouts, not images');
  }
  const stackImage = stackImageSetting(env);
  const network = text(env, 'BUILD_NETWORK', 'none');
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(network)) throw new ConfigError('BUILD_NETWORK', `is not a network name: "${network}"`);
  // The host's network would hand every tenant's build the services listening on this machine.
  if (network === 'host') throw new ConfigError('BUILD_NETWORK', 'cannot be host: builds run tenants\' code; use none, bridge or a network of its own');
  return {
    stackImage,
    timeoutMs: integer(env, 'BUILD_TIMEOUT_SECONDS', 600, 10, 24 * 3600) * 1000,
    memoryBytes: integer(env, 'BUILD_MEMORY_MB', 1024, 64, 1024 * 1024) * 1024 * 1024,
    cpuShares: integer(env, 'BUILD_CPU_SHARES', 512, 2, 1024),
    contextLimitBytes: integer(env, 'BUILD_CONTEXT_LIMIT_MB', 256, 1, 64 * 1024) * 1024 * 1024,
    network,
    registry,
    imageLimitBytes: integer(env, 'BUILD_IMAGE_LIMIT_MB', 2048, 1, 1024 * 1024) * 1024 * 1024,
    pidsLimit: integer(env, 'BUILD_PIDS_LIMIT', 512, 16, 1_000_000),
    guards: guardsSetting(env),
  };
}

/** `STACK_IMAGE`: the image buildpack builds run in, and the networks' guards' helper container (default `localhost/svc-stack:latest`). */
export function stackImageSetting(env: Env): string {
  const stackImage = text(env, 'STACK_IMAGE', 'localhost/svc-stack:latest');
  if (!IMAGE_REFERENCE.test(stackImage)) throw new ConfigError('STACK_IMAGE', `is not an image reference: "${stackImage}"`);
  return stackImage;
}

/**
 * `DOCKER_GUARDS`: `auto` (default: this machine's iptables when the engine is on a local socket
 * and iptables works here as root, else a helper container on the engine), `local` or `engine`.
 */
export function guardsSetting(env: Env): GuardRunnerChoice {
  return oneOf(env, 'DOCKER_GUARDS', 'auto', ['auto', 'local', 'engine'] as const);
}

/**
 * `REGISTRY`: `host[:port][/path]`, the registry builds are pushed to; unset: null. The host
 * must read as a registry's (a dot, a port or `localhost`), or the engine would take its
 * first part for a namespace on Docker Hub.
 */
export function registrySetting(env: Env): string | null {
  const value = text(env, 'REGISTRY', '').replace(/\/+$/, '');
  if (value === '') return null;
  const match = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*)(:([0-9]{1,5}))?((\/[a-z0-9]+([._-][a-z0-9]+)*)*)$/.exec(value);
  const host = match?.[1] ?? '';
  const port = match?.[6];
  if (!match || (port !== undefined && (Number(port) < 1 || Number(port) > 65535))) {
    throw new ConfigError('REGISTRY', `must be host[:port][/path] of a registry, such as registry.example.com:5000, got "${value}"`);
  }
  if (!host.includes('.') && !host.startsWith('[') && port === undefined && host !== 'localhost') {
    throw new ConfigError('REGISTRY', `"${value}" would be read as a namespace on Docker Hub: give the registry's full host name or its port`);
  }
  return value;
}

/**
 * `REGISTRY_USERNAME` and `REGISTRY_PASSWORD`: both or neither, and only with `REGISTRY`.
 * The password is never echoed in a message.
 */
export function registryLogin(env: Env, registry: string | null): RegistryLogin | null {
  const username = text(env, 'REGISTRY_USERNAME', '');
  const password = env.REGISTRY_PASSWORD ?? '';
  if (username === '' && password === '') return null;
  if (registry === null) throw new ConfigError(username === '' ? 'REGISTRY_PASSWORD' : 'REGISTRY_USERNAME', 'is set, but REGISTRY is not: set REGISTRY to the registry the login is for');
  if (username === '') throw new ConfigError('REGISTRY_USERNAME', 'must be set with REGISTRY_PASSWORD');
  if (password === '') throw new ConfigError('REGISTRY_PASSWORD', 'must be set with REGISTRY_USERNAME');
  if (/[\s:]/.test(username)) throw new ConfigError('REGISTRY_USERNAME', 'cannot hold spaces or colons');
  return { registry, username, password };
}

/** The Docker scheduler's settings; DOCKER_HOST is checked even when another scheduler runs (it may be picked). */
export function docker(env: Env, registry: string | null = null): DockerSettings {
  const host = env.DOCKER_HOST?.trim() ? env.DOCKER_HOST.trim() : null;
  try {
    dockerHostOptions(host);
  } catch (error) {
    throw new ConfigError('DOCKER_HOST', error instanceof Error ? error.message : String(error));
  }
  const name = (variable: string, fallback: string, max: number): string => {
    const value = text(env, variable, fallback);
    if (!new RegExp(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,${max - 1}}$`).test(value)) {
      throw new ConfigError(variable, `must be up to ${max} letters, digits, dots, dashes or underscores, got "${value}"`);
    }
    return value;
  };
  const user = text(env, 'DOCKER_USER', '65534:65534');
  if (!/^[0-9]+(:[0-9]+)?$/.test(user) || user.split(':').some((part) => Number(part) === 0)) {
    throw new ConfigError('DOCKER_USER', `must be a numeric uid[:gid] other than root (0), got "${user}"`);
  }
  return {
    host,
    network: name('DOCKER_NETWORK', 'svc-apps', 64),
    bridge: name('DOCKER_BRIDGE', 'svc-apps0', 15),
    instance: name('DOCKER_INSTANCE', 'default', 64),
    user,
    pidsLimit: integer(env, 'DOCKER_PIDS_LIMIT', 256, 16, 1_000_000),
    readonlyRootfs: flag(env, 'DOCKER_READONLY_ROOTFS', false),
    pullPolicy: oneOf(env, 'DOCKER_PULL_POLICY', 'missing', ['missing', 'always'] as const),
    guardHost: flag(env, 'DOCKER_HOST_GUARD', true),
    guards: guardsSetting(env),
    guardImage: stackImageSetting(env),
    defaultMemory: defaultMemory(env, 'DOCKER_DEFAULT_MEMORY'),
    defaultCpu: defaultCpu(env, 'DOCKER_DEFAULT_CPU'),
    // The platform's own registry is where released builds are pulled from.
    registryAllow: [...registryAllow(env), ...(registry === null ? [] : [registry])],
    logLimit: { maxSize: logSize(env), maxFiles: integer(env, 'DOCKER_LOG_MAX_FILE', 3, 1, 100) },
  };
}

/** `REGISTRY_ALLOW`: comma-separated `host[:port]` of registries on private networks that images may come from. */
export function registryAllow(env: Env): string[] {
  const entries = text(env, 'REGISTRY_ALLOW', '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const entry of entries) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$/.test(entry)) throw new ConfigError('REGISTRY_ALLOW', `must list host[:port] of registries, got "${entry}"`);
  }
  return entries;
}

/** `DOCKER_LOG_MAX_SIZE`: the engine's json-file `max-size` of each container's log (default 10m). */
export function logSize(env: Env): string {
  const value = text(env, 'DOCKER_LOG_MAX_SIZE', '10m');
  if (!/^[1-9][0-9]*[kmg]$/.test(value)) throw new ConfigError('DOCKER_LOG_MAX_SIZE', `must be a size such as 10m or 500k, got "${value}"`);
  return value;
}

/** The SWARM_* settings (SCHEDULER=swarm). */
export function swarm(env: Env): SwarmSettings {
  const prefix = text(env, 'SWARM_SERVICE_PREFIX', 'svc');
  if (!/^[a-zA-Z0-9][a-zA-Z0-9-]{0,19}$/.test(prefix)) throw new ConfigError('SWARM_SERVICE_PREFIX', `must be up to 20 letters, digits or dashes, got "${prefix}"`);
  const nodeAddresses: Record<string, string> = {};
  for (const entry of text(env, 'SWARM_NODE_ADDRESSES', '').split(',').map((e) => e.trim()).filter((e) => e !== '')) {
    const match = /^([A-Za-z0-9][A-Za-z0-9_.-]*)=([0-9a-fA-F:.]+|[A-Za-z0-9][A-Za-z0-9.-]*)$/.exec(entry);
    if (!match) throw new ConfigError('SWARM_NODE_ADDRESSES', `must be node=address pairs separated by commas (node: hostname or id), got "${entry}"`);
    nodeAddresses[match[1] as string] = match[2] as string;
  }
  const network = text(env, 'SWARM_NETWORK', '');
  if (network !== '' && !/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$/.test(network)) {
    throw new ConfigError('SWARM_NETWORK', `must be the name of a Docker network: up to 64 letters, digits, dots, dashes or underscores, got "${network}"`);
  }
  return {
    prefix,
    drainMs: integer(env, 'SWARM_DRAIN_SECONDS', 3, 0, 600) * 1000,
    healthIntervalMs: integer(env, 'SWARM_HEALTH_INTERVAL_SECONDS', 2, 1, 600) * 1000,
    monitorMs: integer(env, 'SWARM_UPDATE_MONITOR_SECONDS', 3, 0, 3600) * 1000,
    updateTimeoutMs: integer(env, 'SWARM_UPDATE_TIMEOUT_SECONDS', 300, 10, 24 * 3600) * 1000,
    nodeAddresses,
    network: network === '' ? null : network,
  };
}

/** `DOCKER_DEFAULT_MEMORY`, `SANDBOX_DEFAULT_MEMORY`: a limit such as `1G` or `512M` (default `1G`), or `none`. */
export function defaultMemory(env: Env, variable: string): string | null {
  const value = text(env, variable, '1G');
  if (value.toLowerCase() === 'none') return null;
  if (!/^[1-9][0-9]*(B|K|M|G|KB|MB|GB)$/i.test(value)) {
    throw new ConfigError(variable, `must be a size such as 512M or 1G, or none, got "${value}"`);
  }
  return value;
}

/** `DOCKER_DEFAULT_CPU`, `SANDBOX_DEFAULT_CPU`: a CPU limit, 1024 = one CPU (default 1024); 0 for none (null). */
export function defaultCpu(env: Env, variable: string): number | null {
  const shares = integer(env, variable, 1024, 0, 1024 * 1024);
  return shares === 0 ? null : shares;
}

