/*
 * Build cgroups made through the engine, for a controller that cannot write the engine
 * machine's cgroups itself (it runs unprivileged, in a container, or on another machine):
 * a short-lived container of the stack image, in the host's user and PID namespaces with the
 * host's cgroup file system mounted, makes the cgroup before the build and removes it after.
 * Whoever may use the engine's API is root on its machine already; this asks nothing more.
 */
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { buildCgroupWrites, type BuildCgroup, type BuildCgroupLimits } from './build-cgroups';

/** Where the helper container sees the host's cgroups. */
const MOUNT = '/svc-host-cgroup';

/** Single-quotes a word for sh. */
const quoted = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/** The sh script that makes cgroup `parent/name` with its limits, on v1 or v2 (whichever the mount holds). */
export function createCgroupScript(parent: string, name: string, limits: BuildCgroupLimits): string {
  const branch = (version: 1 | 2): string[] => {
    const lines: string[] = [];
    if (version === 2) {
      lines.push(`mkdir -p "$R"/${quoted(parent)}`);
      lines.push(`echo '+pids +memory +cpu' > "$R"/cgroup.subtree_control 2>/dev/null || true`);
      lines.push(`echo '+pids +memory +cpu' > "$R"/${quoted(parent)}/cgroup.subtree_control 2>/dev/null || true`);
    }
    for (const write of buildCgroupWrites(version, limits)) {
      const directory = `"$R"/${write.controller === '' ? '' : `${quoted(write.controller)}/`}${quoted(parent)}/${quoted(name)}`;
      const optional = write.file.includes('memsw') ? ' 2>/dev/null || true' : '';
      lines.push(`mkdir -p ${directory}`, `echo ${quoted(write.value)} > ${directory}/${quoted(write.file)}${optional}`);
    }
    return lines;
  };
  return ['set -e', `R=${MOUNT}`, 'if [ -f "$R"/cgroup.controllers ]; then', ...branch(2), 'else', ...branch(1), 'fi', ''].join('\n');
}

/**
 * The sh script that removes cgroup `parent/name` from every hierarchy: kills what is left in
 * it, then removes its directories deepest first, trying for about ten seconds.
 */
export function removeCgroupScript(parent: string, name: string): string {
  const dirs = `"$R"/${quoted(parent)}/${quoted(name)} "$R"/*/${quoted(parent)}/${quoted(name)}`;
  return [
    `R=${MOUNT}`,
    'i=0',
    'while [ $i -lt 100 ]; do',
    '  left=0',
    `  for d in ${dirs}; do`,
    '    [ -d "$d" ] || continue',
    '    for p in $(cat $(find "$d" -name cgroup.procs) 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done',
    '    for s in $(find "$d" -depth -type d); do rmdir "$s" 2>/dev/null || left=1; done',
    '  done',
    '  [ $left -eq 0 ] && exit 0',
    '  i=$((i + 1))',
    '  sleep 0.1',
    'done',
    'exit 1',
    '',
  ].join('\n');
}

/** Makes and removes build cgroups with helper containers of `image` on the engine. */
export class EngineBuildCgroups {
  constructor(
    private readonly docker: Docker,
    private readonly image: string,
    private readonly parentName: string,
  ) {}

  async create(limits: BuildCgroupLimits): Promise<BuildCgroup> {
    const name = `build-${randomBytes(8).toString('hex')}`;
    const cgroup: BuildCgroup = { parent: `/${this.parentName}/${name}`, remove: () => this.run(removeCgroupScript(this.parentName, name)) };
    try {
      await this.run(createCgroupScript(this.parentName, name, limits));
    } catch (error) {
      await cgroup.remove().catch(() => undefined);
      throw error;
    }
    return cgroup;
  }

  /** Runs `script` in a helper container; rejects with its output when it exits non-zero. */
  private async run(script: string): Promise<void> {
    const container = await this.docker.createContainer({
      Image: this.image,
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: [script],
      User: '0:0',
      Labels: { 'svc.build-cgroup': 'true' },
      HostConfig: {
        NetworkMode: 'none',
        UsernsMode: 'host',
        PidMode: 'host',
        Binds: [`/sys/fs/cgroup:${MOUNT}`],
        LogConfig: { Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '1' } },
      },
    });
    try {
      await container.start();
      const { StatusCode } = (await container.wait()) as { StatusCode: number };
      if (StatusCode !== 0) {
        const output = (await container.logs({ stdout: true, stderr: true })).toString('utf8').slice(-500);
        throw new Error(`the cgroup helper exited ${StatusCode}: ${output.trim()}`);
      }
    } finally {
      await container.remove({ force: true }).catch(() => undefined);
    }
  }
}
