import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BuildDestination, CompileRequest } from '@svc/core';
import { InMemoryLogStore } from '@svc/core/testing';
import { ProcessScheduler, ProcessSourceCompiler, type ProcessSourceCompilerOptions } from '@svc/scheduler-process';
import { aRun } from './fixtures';
import { testUidRange } from './sandbox';
import { removeFixtureBuildpacks, writeTree } from './buildpacks';

/** A sandboxed scheduler and a compiler on one data directory, made afresh for each test. */
export class CompileFixture {
  dataDir = '';
  scheduler!: ProcessScheduler;
  compiler!: ProcessSourceCompiler;
  readonly uidRange = testUidRange();
  private readonly uuids = new Map<string, string>();
  private checkouts = 0;

  /** Makes the scheduler (prepared, with `allowLocalPorts` open to apps) and a compiler with `options`. */
  async setUp(options: Partial<ProcessSourceCompilerOptions> = {}, allowLocalPorts: number[] = [], maxProcesses = 256, buildAllowed: BuildDestination[] = []): Promise<void> {
    this.dataDir = await mkdtemp(join(tmpdir(), 'svc-compile-data-'));
    this.scheduler = new ProcessScheduler({
      dataDir: this.dataDir,
      logs: new InMemoryLogStore(),
      portRange: { from: 58000, to: 58999 },
      startTimeoutMs: 20_000,
      settleMs: 300,
      stopTimeoutMs: 3000,
      sandbox: { uidRange: this.uidRange, maxProcesses, buildAllowed },
    });
    const status = await this.scheduler.prepare(allowLocalPorts);
    if (status.problem !== null) throw new Error(status.problem);
    this.compiler = new ProcessSourceCompiler({ scheduler: this.scheduler, dataDir: this.dataDir, ...options });
  }

  async tearDown(): Promise<void> {
    await this.scheduler.shutdown();
    await rm(this.dataDir, { recursive: true, force: true });
    await removeFixtureBuildpacks();
  }

  /** The app's uuid, the same for each call with the same app. */
  uuid(app: string): string {
    const known = this.uuids.get(app) ?? randomUUID();
    this.uuids.set(app, known);
    return known;
  }

  /** A checkout of `files` under the data directory, as the git builder makes one, and the request to compile it. */
  async checkout(app: string, files: Record<string, string>, env: Record<string, string> = {}): Promise<CompileRequest> {
    const directory = join(this.dataDir, 'builds', app, `checkout-${++this.checkouts}`);
    await writeTree(directory, files);
    return { app, appUuid: this.uuid(app), directory, env };
  }

  /** The host directory of the app's build cache. */
  cacheDir(app: string): string {
    return join(this.dataDir, 'build-cache', this.uuid(app));
  }

  /** The uid the app's processes run as. */
  async uidOf(app: string): Promise<number> {
    const result = await this.scheduler.run(aRun('id -u', { app }));
    if (result.exitCode !== 0) throw new Error(result.output);
    return Number(result.output.trim());
  }
}
