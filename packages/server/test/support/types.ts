/** JSON bodies of the API as a client sees them (SPEC.md and the seed, field by field). */

/** The paginated list envelope. */
export interface PageJson<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export interface UserJson {
  id: number;
  last_login: string | null;
  is_superuser: boolean;
  username: string;
  first_name: string;
  last_name: string;
  email: string;
  is_staff: boolean;
  is_active: boolean;
  date_joined: string;
  groups: unknown[];
  user_permissions: unknown[];
}

export interface AppJson {
  id: string;
  uuid: string;
  owner: string;
  structure: Record<string, number>;
  url: string;
  created: string;
  updated: string;
}

export interface ContainerJson {
  owner: string;
  app: string;
  release: string;
  type: string;
  num: number;
  state: string;
  uuid: string;
  created: string;
  updated: string;
}

export interface ConfigJson {
  owner: string;
  app: string;
  values: Record<string, string>;
  memory: Record<string, string>;
  cpu: Record<string, number>;
  tags: Record<string, string>;
  uuid: string;
  created: string;
  updated: string;
}

export interface DomainJson {
  app: string;
  domain: string;
  owner: string;
  created: string;
  updated: string;
}

export interface BuildJson {
  app: string;
  image: string;
  dockerfile: string;
  procfile: Record<string, string>;
  sha: string;
  owner: string;
  uuid: string;
  created: string;
  updated: string;
}

export interface ReleaseJson {
  app: string;
  version: number;
  build: string | null;
  config: string;
  summary: string;
  owner: string;
  uuid: string;
  created: string;
  updated: string;
}

export interface KeyJson {
  id: string;
  public: string;
  fingerprint: string;
  owner: string;
  uuid: string;
  created: string;
  updated: string;
}

export interface CertificateItemJson {
  common_name: string;
  expires: string;
}

export interface CertificateJson extends CertificateItemJson {
  id: number;
  owner: string;
  starts: string;
  issuer: string;
  san: string[];
  fingerprint: string;
  created: string;
  updated: string;
}

export interface AdminJson {
  username: string;
  is_superuser: boolean;
}

/** Error bodies: `{detail}`, per-field lists, or (1.0 business errors) a bare string. */
export type ErrorJson = { detail: string } | Record<string, string[]> | string;

/** Application-level timestamps: `YYYY-MM-DDTHH:MM:SSUTC`. */
export const APP_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}UTC$/;
/** Account timestamps: ISO 8601 with milliseconds and `Z`. */
export const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** A UUID in its canonical text form. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** An API token: 40 lowercase hex characters. */
export const TOKEN = /^[0-9a-f]{40}$/;
