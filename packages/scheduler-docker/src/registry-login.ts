/**
 * The platform registry's login (`REGISTRY`, `REGISTRY_USERNAME`, `REGISTRY_PASSWORD`). The
 * engine gets it with the platform's own images only: an image of any other registry is
 * pulled without it, so no other registry ever sees the password.
 */
export interface RegistryLogin {
  /** `host[:port][/path]`, as REGISTRY names it. */
  registry: string;
  username: string;
  password: string;
}

/** The engine's auth config (the `X-Registry-Auth` header). */
export interface RegistryAuth {
  username: string;
  password: string;
  serveraddress: string;
}

/** The host (and port) of a registry address or image reference: its first part when it reads as a registry's, else null (Docker Hub). */
export function registryHostOf(reference: string): string | null {
  const slash = reference.indexOf('/');
  if (slash < 0) return null;
  const first = reference.slice(0, slash);
  return first.includes('.') || first.includes(':') || first === 'localhost' ? first.toLowerCase() : null;
}

/** The auth config for pulling or pushing `image`: the login when the image is the login's registry's, else undefined. */
export function authFor(login: RegistryLogin | null | undefined, image: string): RegistryAuth | undefined {
  if (!login) return undefined;
  const host = registryHostOf(`${login.registry}/`);
  if (host === null || registryHostOf(image) !== host) return undefined;
  return { username: login.username, password: login.password, serveraddress: host };
}
