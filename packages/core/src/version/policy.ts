import { DomainError } from '../errors';

/** The API versions this server speaks, oldest first. */
export const API_VERSIONS = ['1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6', '1.7'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];
export const LATEST_API_VERSION: ApiVersion = '1.7';
/** The major version of the API; clients announcing another one are refused. */
export const API_MAJOR_VERSION = '1';

/** The requested API version is not one this server speaks (HTTP 406). */
export class UnsupportedApiVersion extends DomainError {
  readonly code = 'API.UNSUPPORTED_VERSION';
  readonly kind = 'invalid' as const;
  constructor(readonly requested: string) {
    super(`Unsupported API version: ${requested}`);
  }
}

/** The client speaks another major version (HTTP 405). */
export class ClientVersionMismatch extends DomainError {
  readonly code = 'API.CLIENT_VERSION_MISMATCH';
  readonly kind = 'invalid' as const;
  constructor(readonly clientVersion: string) {
    super(`Client and server versions do not match. Client version: ${clientVersion} Server version: ${API_MAJOR_VERSION}`);
  }
}

/**
 * Parses `1.<n>` into a supported version.
 * @throws UnsupportedApiVersion when the text is not a version this server speaks.
 */
export function parseApiVersion(text: string): ApiVersion {
  const trimmed = text.trim();
  const found = API_VERSIONS.find((v) => v === trimmed);
  if (!found) throw new UnsupportedApiVersion(trimmed);
  return found;
}

/**
 * Checks a client's announced version (`Svc-Version`): only its major part must match.
 * @throws ClientVersionMismatch when the major version differs.
 */
export function assertClientVersion(text: string): void {
  const major = text.trim().split('.')[0];
  if (major !== API_MAJOR_VERSION) throw new ClientVersionMismatch(text.trim());
}

/** Endpoints that exist only from some version on. */
export type VersionedFeature = 'certs' | 'users' | 'restart' | 'passwd' | 'tokens' | 'appUpdate';

/** Everything that differs between API versions, for one version. */
export interface VersionPolicy {
  readonly version: ApiVersion;
  /** Which API/platform version headers responses carry. */
  readonly versionHeaders: 'none' | 'x-prefixed' | 'both';
  /**
   * Whether the API and platform version are also sent as `DEIS_API_VERSION` and
   * `DEIS_PLATFORM_VERSION`, the names the Deis v1 client reads (it warns on every call
   * without them). Sent wherever the unprefixed `SVC_*` pair is (1.4 on).
   */
  readonly deisVersionHeaders: boolean;
  /** Header names that carry the new release number on config and build creation. */
  readonly releaseHeaders: readonly string[];
  /** 1.0 sends business errors as a bare JSON string; later versions as `{detail}`. */
  readonly errorBody: 'bare-string' | 'detail';
  /** Status for an app the caller may not see: 403 in 1.0, 404 (indistinguishable from absent) later. */
  readonly hiddenAppStatus: 403 | 404;
  /** Run response: `{rc, output}` before 1.5, `[rc, output]` from 1.5. */
  readonly runResponse: 'object' | 'array';
  /** Logs body: a JSON string before 1.7, plain text lines from 1.7. */
  readonly logsBody: 'json-string' | 'text';
  readonly honoursPageSize: boolean;
  readonly honoursLogLines: boolean;
  /** Certificates may be given a common name other than the subject's (1.3). */
  readonly certCommonNameOverride: boolean;
  /** An administrator acting on another user must give their own password (before 1.6). */
  readonly adminNeedsPasswordForOthers: boolean;
  /** Endpoints available at this version. */
  readonly features: ReadonlySet<VersionedFeature>;
}

const atLeast = (version: ApiVersion, minimum: ApiVersion): boolean =>
  API_VERSIONS.indexOf(version) >= API_VERSIONS.indexOf(minimum);

/** The version each versioned endpoint appears in (the seed's "Changes by version"). */
const FEATURE_SINCE: Record<VersionedFeature, ApiVersion> = {
  certs: '1.2',
  users: '1.3',
  restart: '1.3',
  passwd: '1.4',
  tokens: '1.5',
  appUpdate: '1.7',
};

function build(version: ApiVersion): VersionPolicy {
  const since = (minimum: ApiVersion) => atLeast(version, minimum);
  const features = new Set(
    (Object.keys(FEATURE_SINCE) as VersionedFeature[]).filter((f) => since(FEATURE_SINCE[f])),
  );
  return Object.freeze({
    version,
    versionHeaders: since('1.4') ? 'both' : since('1.1') ? 'x-prefixed' : 'none',
    deisVersionHeaders: since('1.4'),
    releaseHeaders: since('1.4') ? ['Svc-Release', 'X-Svc-Release'] : ['X-Svc-Release'],
    errorBody: since('1.1') ? 'detail' : 'bare-string',
    hiddenAppStatus: since('1.1') ? 404 : 403,
    runResponse: since('1.5') ? 'array' : 'object',
    logsBody: since('1.7') ? 'text' : 'json-string',
    honoursPageSize: since('1.6'),
    honoursLogLines: since('1.3'),
    certCommonNameOverride: since('1.3'),
    adminNeedsPasswordForOthers: !since('1.6'),
    features,
  } satisfies VersionPolicy);
}

const POLICIES = new Map<ApiVersion, VersionPolicy>(API_VERSIONS.map((v) => [v, build(v)]));

/** The policy for a version: one table of every difference between 1.0 and 1.7. */
export function policyFor(version: ApiVersion): VersionPolicy {
  return POLICIES.get(version) as VersionPolicy;
}
