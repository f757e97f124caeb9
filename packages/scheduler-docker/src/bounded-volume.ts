/*
 * Volumes of a fixed size on the engine, for what a build writes (its /app and its cache): an
 * ext2 file system on an image file kept in an ordinary volume (the backing), attached to a
 * loop device by a short-lived helper container of the stack image, and mounted by the engine
 * itself as a `local` volume of that device. A write past its size fails with ENOSPC while
 * the build runs; the image file is sparse, so it takes no more of the engine's disk than
 * what was written in it. The helper runs in the host's user namespace with CAP_SYS_ADMIN and
 * the loop devices only (no other capability, no network): whoever may use the engine's API
 * is root on its machine already.
 */
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { engineStatus, outputOf, waitAtMost } from './engine';
import { DEFAULT_LOG_LIMIT, logConfigOf } from './options';

/** Where the helper sees the backing volume. */
const BACKING = '/disk';
/** The uid and gid (in the build's containers) a new file system's top directory is given to: the app's. */
const OWNER = 10000;

/** A volume of a fixed size, attached for one build. */
export interface BoundedVolume {
  /** The engine's volume to mount (type `volume`). */
  readonly name: string;
  /**
   * Takes it off the engine once no container uses it: the volume, the loop device, and the
   * image file too with `drop` (what was written in it goes).
   */
  release(drop: boolean): Promise<void>;
}

/** What to attach. */
export interface BoundedVolumeRequest {
  /** The stack image: its busybox has `truncate`, `mke2fs`, `losetup`, `mount`. */
  image: string;
  /** The ordinary volume that keeps the image file (made when missing). */
  backing: string;
  /** The image file's name in it (letters, digits, `-`). */
  file: string;
  /** The file system's size in bytes. */
  bytes: number;
  /** Start from an empty file system even when the image file exists. */
  fresh: boolean;
  /** The backing volume is this volume's alone: it is removed when the image file is dropped. */
  ownBacking: boolean;
  labels: Record<string, string>;
}

/** The label of a bounded volume naming the path its loop device was attached by (see {@link detachScript}). */
export const LOOP_LINK_LABEL = 'svc.loop-link';

/**
 * The helper's script: makes the image file (when missing, of another size, or `fresh`) and
 * attaches it through the path `/disk/<link>.img` (a name of this attach alone); prints the
 * loop device.
 */
export function attachScript(file: string, bytes: number, fresh: boolean, link: string): string {
  if (!/^[A-Za-z0-9-]+$/.test(file) || !/^[A-Za-z0-9-]+$/.test(link) || !Number.isSafeInteger(bytes) || bytes <= 0) throw new Error(`unusable bounded volume ${file} of ${bytes} bytes`);
  return [
    'set -e',
    `f=${BACKING}/${file}.img`,
    `l=${BACKING}/${link}.img`,
    `${fresh ? 'rm -f "$f"' : ':'}`,
    `if [ ! -f "$f" ] || [ "$(stat -c %s "$f")" != ${bytes} ]; then`,
    '  rm -f "$f"',
    `  truncate -s ${bytes} "$f"`,
    '  mke2fs -F -m 0 -i 16384 "$f" >/dev/null',
    '  new=1',
    'fi',
    // A name of this attach alone: `losetup -a` then tells its device from any other build's.
    'ln -f "$f" "$l"',
    'i=0',
    'until losetup -f "$l" 2>/dev/null; do i=$((i + 1)); [ $i -lt 20 ] || { rm -f "$l"; echo "no free loop device" >&2; exit 1; }; sleep 0.2; done',
    // busybox's `losetup -a` ends its lines with the file, util-linux's (a Debian stack) with it in parentheses.
    `d=$(losetup -a | sed -n "s#^\\(/dev/loop[0-9]*\\): .* (\\{0,1\\}$l)\\{0,1\\}\\$#\\1#p" | head -n 1)`,
    'rm -f "$l"',
    '[ -n "$d" ] || { echo "the loop device was not found" >&2; exit 1; }',
    'if [ -n "${new:-}" ]; then',
    // Its top directory is the app user's, as the engine maps it (the backing volume is its root's).
    '  mkdir -p /mnt/fs && mount -t ext2 "$d" /mnt/fs',
    '  rmdir /mnt/fs/lost+found 2>/dev/null || true',
    `  chown $(( $(stat -c %u ${BACKING}) + ${OWNER} )):$(( $(stat -c %g ${BACKING}) + ${OWNER} )) /mnt/fs && chmod 0700 /mnt/fs`,
    '  umount /mnt/fs',
    'fi',
    'echo "device $d"',
    '',
  ].join('\n');
}

/**
 * The helper's script that detaches `device` only while it is still the one attached through
 * `link` (`losetup -a` names that path): never a device another build attached since.
 */
export function detachScript(device: string, link: string): string {
  if (!/^\/dev\/loop[0-9]+$/.test(device) || !/^[A-Za-z0-9-]+$/.test(link)) throw new Error(`unusable loop device ${device} or link ${link}`);
  return `if losetup -a | grep -q '^${device}: .*[ (]${BACKING}/${link}.img'; then losetup -d ${device}; fi`;
}

/**
 * Attaches a volume of `request.bytes` for one build.
 * @throws Error when the helper cannot run or fails (no loop device, no CAP_SYS_ADMIN for it).
 */
export async function attachBoundedVolume(docker: Docker, request: BoundedVolumeRequest): Promise<BoundedVolume> {
  await docker.createVolume({ Name: request.backing, Labels: request.labels });
  const link = `${request.file}-${randomBytes(6).toString('hex')}`;
  const attached = await runDiskHelper(docker, request.image, request.backing, attachScript(request.file, request.bytes, request.fresh, link), request.labels);
  const device = /^device (\/dev\/loop[0-9]+)$/m.exec(attached)?.[1];
  if (device === undefined) throw new Error(`the bounded volume helper named no loop device: ${attached.slice(0, 500)}`);
  const name = `${request.backing}-fs-${randomBytes(6).toString('hex')}`;
  const detach = async (drop: boolean): Promise<void> => {
    await runDiskHelper(docker, request.image, request.backing, `${detachScript(device, link)}${drop ? `; rm -f ${BACKING}/${request.file}.img` : ''}`, request.labels);
  };
  try {
    await docker.createVolume({ Name: name, Labels: { ...request.labels, [LOOP_LINK_LABEL]: link }, Driver: 'local', DriverOpts: { type: 'ext2', device, o: 'nosuid,nodev' } });
  } catch (error) {
    await detach(request.fresh).catch(() => undefined);
    throw error;
  }
  return {
    name,
    release: async (drop) => {
      await removeVolume(docker, name);
      await detach(drop);
      if (drop && request.ownBacking) await removeVolume(docker, request.backing);
    },
  };
}

/**
 * Takes away what an interrupted controller left of its builds' bounded volumes, created
 * before `createdBefore` (ms since the epoch) and used by no container: each file system's
 * volume and its loop device, then the builds' own backing volumes (`svc-app-…`). An app's
 * cache volume stays. Resolves with how many volumes were removed.
 */
export async function removeLeftoverVolumes(docker: Docker, image: string, appLabel: string, createdBefore: number): Promise<number> {
  const dangling = async (): Promise<Docker.VolumeInspectInfo[]> =>
    ((await docker.listVolumes({ filters: { dangling: ['true'], label: [appLabel] } })).Volumes ?? []).filter((volume) => {
      const created = Date.parse((volume as { CreatedAt?: string }).CreatedAt ?? '');
      return Number.isFinite(created) && created < createdBefore;
    });
  let removed = 0;
  for (const volume of await dangling()) {
    const match = /^(.+)-fs-[0-9a-f]{12}$/.exec(volume.Name);
    if (match === null) continue;
    const device = volume.Options?.device ?? '';
    const link = volume.Labels?.[LOOP_LINK_LABEL] ?? '';
    await removeVolume(docker, volume.Name);
    removed++;
    if (/^\/dev\/loop[0-9]+$/.test(device) && /^[A-Za-z0-9-]+$/.test(link)) {
      await runDiskHelper(docker, image, match[1] ?? '', detachScript(device, link), {}).catch(() => undefined);
    }
  }
  for (const volume of await dangling()) {
    if (!/^svc-app-[0-9a-f-]{36}$/.test(volume.Name)) continue;
    await removeVolume(docker, volume.Name);
    removed++;
  }
  return removed;
}

/** Removes a volume, waiting a little for the engine to let go of it after its last container. */
async function removeVolume(docker: Docker, name: string): Promise<void> {
  for (let tries = 0; ; tries++) {
    try {
      await docker.getVolume(name).remove();
      return;
    } catch (error) {
      const status = engineStatus(error);
      if (status === 404) return;
      if (status !== 409 || tries >= 50) throw error;
      await new Promise((done) => setTimeout(done, 200));
    }
  }
}

/** Runs the helper's script with the backing volume at /disk; resolves with its output, rejects with it when it fails. */
async function runDiskHelper(docker: Docker, image: string, backing: string, script: string, labels: Record<string, string>): Promise<string> {
  const container = await docker.createContainer({
    Image: image,
    Entrypoint: ['/bin/sh', '-c'],
    Cmd: [script],
    User: '0:0',
    WorkingDir: '/',
    Labels: labels,
    Tty: false,
    HostConfig: {
      NetworkMode: 'none',
      UsernsMode: 'host',
      CapDrop: ['ALL'],
      CapAdd: ['SYS_ADMIN', 'CHOWN', 'FOWNER', 'DAC_OVERRIDE'],
      // The engine's default AppArmor profile refuses mount(2), which the first chown needs.
      SecurityOpt: ['no-new-privileges', 'apparmor=unconfined'],
      // The loop devices (block 7:*) and their control (char 10:237), seen as the host has them.
      DeviceCgroupRules: ['b 7:* rwm', 'c 10:237 rwm'],
      Mounts: [
        { Type: 'volume', Source: backing, Target: BACKING },
        { Type: 'bind', Source: '/dev', Target: '/dev' },
      ],
      PidsLimit: 32,
      Memory: 128 * 1024 * 1024,
      MemorySwap: 128 * 1024 * 1024,
      LogConfig: logConfigOf(DEFAULT_LOG_LIMIT) as Docker.HostConfig['LogConfig'],
    },
  });
  try {
    const waited = container.wait({ condition: 'next-exit' }) as Promise<{ StatusCode?: number }>;
    await container.start();
    let status: { StatusCode?: number } | undefined;
    await waitAtMost(
      waited.then((ended) => (status = ended)),
      120_000,
    );
    const output = await outputOf(container);
    if (status === undefined || (status.StatusCode ?? 1) !== 0) throw new Error(`the bounded volume helper failed: ${output.slice(0, 500)}`);
    return output;
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}
