import { engineScheduling, type EngineScheduling, type EngineSchedulerOptions } from '../options';

/** How a SwarmScheduler runs apps as Swarm services (`docker`: a client of a manager of the swarm). */
export interface SwarmSchedulerOptions extends EngineSchedulerOptions {
  /** Services are named `<prefix>-<app>-<type>`. Default `svc`. */
  prefix?: string;
  /** How long a whole change of a service (a rolling restart of every task) may take, ms. Default 300000. */
  updateTimeoutMs?: number;
  /**
   * How long a routed task keeps serving after Swarm told it to stop, before its app gets
   * SIGTERM: the router stops sending it requests meanwhile. Default 3000.
   */
  drainMs?: number;
  /** How often the health check of a routed task runs, ms. Default 2000. */
  healthIntervalMs?: number;
  /** How long Swarm watches each restarted task for a failure before the next (UpdateConfig.Monitor), ms. Default 3000. */
  monitorMs?: number;
  /** Delay between crash restarts of a task, ms. Default 1000. */
  restartDelayMs?: number;
  /** How often the tasks are read for the routes and states, ms. Default 1000; 200 while a change is under way. */
  pollMs?: number;
  /** The address the router uses for a node, by node hostname or id; others use the node's own (Status.Addr). */
  nodeAddresses?: Record<string, string>;
  /**
   * A swarm-scoped bridge network made from a config-only network on every node with
   * inter-container communication off (`com.docker.network.bridge.enable_icc=false`): every
   * task joins it. Unset: tasks use their node's default bridge, where they reach each other.
   */
  network?: string | null;
  /** Called when the endpoints of some app changed (tasks replaced, moved, stopped): the router refreshes its routes. */
  onEndpointsChanged?: () => void;
}

/** The options with their defaults, and the engine scheduling shared with the Docker scheduler. */
export interface SwarmSettings {
  readonly base: EngineScheduling;
  readonly prefix: string;
  readonly updateTimeoutMs: number;
  readonly drainMs: number;
  readonly healthIntervalMs: number;
  readonly monitorMs: number;
  readonly restartDelayMs: number;
  readonly pollMs: number;
  readonly nodeAddresses: Record<string, string>;
  readonly network: string | null;
  readonly endpointsChanged: () => void;
}

/** Resolves the options. @throws ValidationFailed (from the core) when `defaultMemory` is not a size. */
export function swarmSettings(options: SwarmSchedulerOptions): SwarmSettings {
  return {
    base: engineScheduling(options),
    prefix: options.prefix ?? 'svc',
    updateTimeoutMs: options.updateTimeoutMs ?? 300_000,
    drainMs: options.drainMs ?? 3000,
    healthIntervalMs: options.healthIntervalMs ?? 2000,
    monitorMs: options.monitorMs ?? 3000,
    restartDelayMs: options.restartDelayMs ?? 1000,
    pollMs: options.pollMs ?? 1000,
    nodeAddresses: options.nodeAddresses ?? {},
    network: options.network ?? null,
    endpointsChanged: options.onEndpointsChanged ?? (() => undefined),
  };
}
