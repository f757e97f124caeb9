import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import type { RegistryAuth } from '../registry-login';

/** The parts of a Swarm service's spec the scheduler writes and reads (Engine API 1.41). */
export interface ServiceSpec {
  Name: string;
  Labels: Record<string, string>;
  TaskTemplate: TaskTemplate;
  Mode: { Replicated?: { Replicas: number }; ReplicatedJob?: { MaxConcurrent: number; TotalCompletions: number } };
  UpdateConfig?: UpdateConfig;
  RollbackConfig?: UpdateConfig;
  EndpointSpec?: { Mode?: 'vip' | 'dnsrr'; Ports?: Array<{ Protocol: 'tcp'; TargetPort: number; PublishedPort?: number; PublishMode: 'host' | 'ingress' }> };
}

/** How the tasks of a service are made. */
export interface TaskTemplate {
  ContainerSpec: {
    Image: string;
    Command?: string[];
    Args?: string[];
    Env: string[];
    User: string;
    Labels: Record<string, string>;
    Init: boolean;
    CapabilityDrop: string[];
    ReadOnly: boolean;
    Mounts?: Array<{ Type: 'tmpfs'; Target: string; TmpfsOptions: { SizeBytes: number; Mode: number } }>;
    StopGracePeriod: number;
    Healthcheck?: { Test: string[]; Interval: number; Timeout: number; Retries: number; StartPeriod: number };
  };
  Resources: { Limits: { MemoryBytes?: number; NanoCPUs?: number; Pids?: number } };
  LogDriver?: { Name: string; Options: Record<string, string> };
  RestartPolicy: { Condition: 'none' | 'on-failure' | 'any'; Delay?: number; MaxAttempts?: number; Window?: number };
  Placement?: { Preferences?: Array<{ Spread: { SpreadDescriptor: string } }> };
  /** The swarm networks the tasks join (by name or id); none: the node's default bridge. */
  Networks?: Array<{ Target: string }>;
  ForceUpdate?: number;
}

/** A rolling update's or a rollback's settings. */
export interface UpdateConfig {
  Parallelism: number;
  Delay: number;
  FailureAction: 'pause' | 'continue' | 'rollback';
  Monitor: number;
  MaxFailureRatio: number;
  Order: 'stop-first' | 'start-first';
}

/** A service as the engine reports it. */
export interface ServiceInfo {
  ID: string;
  Version: { Index: number };
  Spec: ServiceSpec;
  PreviousSpec?: ServiceSpec;
  UpdateStatus?: { State?: string; Message?: string; StartedAt?: string; CompletedAt?: string };
}

/** A task as the engine reports it. */
export interface TaskInfo {
  ID: string;
  ServiceID: string;
  Slot?: number;
  NodeID?: string;
  CreatedAt: string;
  DesiredState: string;
  Status: {
    Timestamp?: string;
    State: string;
    Message?: string;
    Err?: string;
    ContainerStatus?: { ContainerID?: string; ExitCode?: number };
    PortStatus?: { Ports?: Array<{ TargetPort?: number; PublishedPort?: number; PublishMode?: string }> };
  };
  Spec?: { ForceUpdate?: number; ContainerSpec?: { Labels?: Record<string, string> } };
}

/** A node as the engine reports it. */
export interface NodeInfo {
  ID: string;
  Description?: { Hostname?: string };
  Status?: { State?: string; Addr?: string };
  ManagerStatus?: { Addr?: string };
  Spec?: { Availability?: string };
}

/** What `GET /info` says of the engine's place in a swarm. */
export interface SwarmInfo {
  Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean; NodeID?: string };
}

/** One call of the Engine API by path, with the query and body kept apart (dockerode would mix them). */
export function callEngine<T>(
  docker: Docker,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  query: Record<string, string | number | boolean> = {},
  body?: unknown,
  signal?: AbortSignal,
  auth?: RegistryAuth,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    docker.modem.dial(
      {
        path: `${path}?`,
        method,
        options: { _query: query, ...(body === undefined ? {} : { _body: body }) },
        statusCodes: { 200: true, 201: true, 204: true },
        ...(signal ? { abortSignal: signal } : {}),
        // The X-Registry-Auth header: with it, Swarm keeps the login with the service and its nodes pull with it.
        ...(auth ? { authconfig: auth } : {}),
      },
      (error: unknown, data: unknown) => (error ? reject(error) : resolve(data as T)),
    );
  });
}

/** A streamed answer of the Engine API (logs): the response stream, to be destroyed by the caller. */
export function streamFromEngine(docker: Docker, path: string, query: Record<string, string | number | boolean>, signal?: AbortSignal): Promise<Readable> {
  return new Promise<Readable>((resolve, reject) => {
    docker.modem.dial(
      { path: `${path}?`, method: 'GET', isStream: true, options: { _query: query }, statusCodes: { 200: true }, ...(signal ? { abortSignal: signal } : {}) },
      (error: unknown, data: unknown) => (error ? reject(error) : resolve(data as Readable)),
    );
  });
}

/** Tasks as filters of the task list (`service`, `desired-state`, ...). */
export function listTasks(docker: Docker, filters: Record<string, string[]>): Promise<TaskInfo[]> {
  return callEngine<TaskInfo[]>(docker, 'GET', '/tasks', { filters: JSON.stringify(filters) });
}

/** The task states in which its container has not run yet or still runs. */
export const TASK_LIVE_STATES = new Set(['new', 'allocated', 'pending', 'assigned', 'accepted', 'preparing', 'ready', 'starting', 'running']);
/** The task states of a task that ended badly. */
export const TASK_FAILED_STATES = new Set(['failed', 'rejected', 'orphaned']);
