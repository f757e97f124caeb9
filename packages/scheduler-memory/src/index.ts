import type { ContainerSpec, ContainerState, RunResult, RunSpec, Scheduler } from '@svc/core';

/**
 * A scheduler that runs nothing: it records containers as up when started and forgets
 * them when stopped, and answers every one-off run at once with exit code 0 and no
 * output. It exists so the API can be exercised and load-tested without starting
 * processes; the scheduler that really runs processes is a separate package.
 */
export class MemoryScheduler implements Scheduler {
  private readonly containers = new Map<string, ContainerState>();

  /** Records the container as up; starting a recorded container again is harmless. */
  async start(spec: ContainerSpec): Promise<ContainerState> {
    this.containers.set(spec.id, 'up');
    return 'up';
  }

  /** Forgets the container; stopping an unknown one is not an error. */
  async stop(id: string): Promise<void> {
    this.containers.delete(id);
  }

  /** Runs nothing and keeps nothing: resolves at once with exit code 0 and empty output. */
  async run(_spec: RunSpec): Promise<RunResult> {
    return { exitCode: 0, output: '' };
  }

  /** The recorded state of each known id; unknown ids are left out. */
  async states(ids: string[]): Promise<Map<string, ContainerState>> {
    const states = new Map<string, ContainerState>();
    for (const id of ids) {
      const state = this.containers.get(id);
      if (state !== undefined) states.set(id, state);
    }
    return states;
  }

  /** How many containers are recorded, for load tests that check nothing leaks. */
  get size(): number {
    return this.containers.size;
  }
}
