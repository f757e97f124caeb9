import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { normaliseBuildpackUrl } from '@svc/core';
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
  };
}
