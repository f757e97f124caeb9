import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { isIPv4 } from 'node:net';
import { normaliseBuildpackUrl, type BuildDestination } from '@svc/core';
import { ConfigError } from './config-values';

/** How pushed commits are compiled with buildpacks (the adapters' side; the core's is in Settings). */
export interface BuildpackSettings {
  /** BUILDPACKS_DIR: the operator's buildpacks (one directory each), tried before the built-in ones; null: none. */
  dir: string | null;
  /** BUILD_CACHE_LIMIT_MB, in bytes: the largest build cache an app keeps between builds; 0 keeps none. */
  cacheLimitBytes: number;
  /** BUILD_IMAGE_LIMIT_MB, in bytes: the most a buildpack build may make (the image on an engine, the app directory on the process scheduler). */
  imageLimitBytes: number;
  /** BUILDPACK_NETWORK and BUILDPACK_BRIDGE: the engine network buildpack builds run on, and its Linux bridge when the controller makes it. */
  network: string;
  bridge: string;
  /** BUILD_NETWORK_ALLOW: what build steps may reach besides the internet (an internal package mirror), on this machine or a private range. */
  networkAllow: BuildDestination[];
}

type Env = Record<string, string | undefined>;

const value = (env: Env, name: string): string => env[name]?.trim() ?? '';

/**
 * `BUILDPACK_URL_ALLOW`: comma-separated git URLs an app's `BUILDPACK_URL` may name, each an
 * exact URL or a prefix ending in `/`; empty: none. Each is stored normalised.
 */
export function buildpackUrlAllow(env: Env): string[] {
  const entries = value(env, 'BUILDPACK_URL_ALLOW').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  return entries.map((entry) => {
    try {
      return normaliseBuildpackUrl(entry, entry.endsWith('/'));
    } catch (error) {
      // A password written into the URL must not reach the start-up log.
      const shown = entry.replace(/^([^/]*\/\/)[^/]*@/, '$1***@');
      throw new ConfigError('BUILDPACK_URL_ALLOW', `"${shown}" is not usable: ${error instanceof Error ? error.message : String(error)} (give https:// git URLs, or prefixes ending in "/", separated by commas)`);
    }
  });
}

/**
 * `BUILD_NETWORK_ALLOW`: destinations build steps may reach besides the public internet,
 * separated by commas or spaces, each an IPv4 address or range with an optional TCP port:
 * `10.1.2.3`, `10.1.2.3:4873`, `10.8.0.0/16`, `10.8.0.0/16:443`. Names are refused: an
 * address is what a rule holds, and a name resolved later could be pointed by its DNS at
 * any address of the network.
 */
export function buildNetworkAllow(env: Env): BuildDestination[] {
  const entries = value(env, 'BUILD_NETWORK_ALLOW').split(/[\s,]+/).filter((entry) => entry !== '');
  return entries.map((entry) => {
    const match = /^([0-9.]+)(?:\/(\d{1,2}))?(?::(\d{1,5}))?$/.exec(entry);
    const address = match?.[1] ?? '';
    const prefix = match?.[2] === undefined ? 32 : Number(match[2]);
    const port = match?.[3] === undefined ? null : Number(match[3]);
    if (match === null || !isIPv4(address)) {
      throw new ConfigError('BUILD_NETWORK_ALLOW', `"${entry}" is not an IPv4 address or range with an optional port (e.g. 10.1.2.3:4873 or 10.8.0.0/16); names are not taken, give the mirror's address`);
    }
    if (prefix > 32) throw new ConfigError('BUILD_NETWORK_ALLOW', `"${entry}": a range's prefix length is at most 32`);
    if (port !== null && (port < 1 || port > 65535)) throw new ConfigError('BUILD_NETWORK_ALLOW', `"${entry}": a port is from 1 to 65535`);
    return { cidr: `${address}/${prefix}`, port };
  });
}

/** `BUILDPACKS_DIR` (an existing directory, made absolute), `BUILD_CACHE_LIMIT_MB` (default 512, 0 to 65536) and `BUILD_IMAGE_LIMIT_MB` (default 2048, 1 to 1048576, as for Dockerfile builds). */
export function buildpackSettings(env: Env, integer: (name: string, fallback: number, min: number, max: number) => number): BuildpackSettings {
  const dir = value(env, 'BUILDPACKS_DIR');
  let absolute: string | null = null;
  if (dir !== '') {
    absolute = resolve(dir);
    let isDirectory = false;
    try {
      isDirectory = statSync(absolute).isDirectory();
    } catch {
      isDirectory = false;
    }
    if (!isDirectory) throw new ConfigError('BUILDPACKS_DIR', `must be an existing directory of buildpacks, got "${dir}"`);
  }
  const network = value(env, 'BUILDPACK_NETWORK') || 'svc-build';
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(network)) throw new ConfigError('BUILDPACK_NETWORK', `is not a network name: "${network}"`);
  const bridge = value(env, 'BUILDPACK_BRIDGE') || 'svc-build0';
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/.test(bridge)) throw new ConfigError('BUILDPACK_BRIDGE', `must be a Linux interface name of at most 15 characters, got "${bridge}"`);
  return {
    dir: absolute,
    cacheLimitBytes: integer('BUILD_CACHE_LIMIT_MB', 512, 0, 64 * 1024) * 1024 * 1024,
    imageLimitBytes: integer('BUILD_IMAGE_LIMIT_MB', 2048, 1, 1024 * 1024) * 1024 * 1024,
    network,
    bridge,
    networkAllow: buildNetworkAllow(env),
  };
}
