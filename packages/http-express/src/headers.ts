import type { Response } from 'express';
import type { VersionPolicy } from '@svc/core';

/** Request headers that select the API version, in order of precedence (Node lower-cases names). */
export const VERSION_REQUEST_HEADERS = ['svc_api_version', 'svc-api-version', 'x_svc_api_version'] as const;
/** Request headers that announce the client's own version. */
export const CLIENT_VERSION_HEADERS = ['svc-version', 'x-svc-version'] as const;

const X_API = 'X_SVC_API_VERSION';
const X_PLATFORM = 'X_SVC_PLATFORM_VERSION';
const API = 'SVC_API_VERSION';
const PLATFORM = 'SVC_PLATFORM_VERSION';
/** The names the Deis v1 client reads; without them it prints a warning on every call. */
const DEIS_API = 'DEIS_API_VERSION';
const DEIS_PLATFORM = 'DEIS_PLATFORM_VERSION';

/** Every response header a version policy may send, for CORS exposure. */
export const EXPOSED_HEADERS = [
  API,
  PLATFORM,
  X_API,
  X_PLATFORM,
  DEIS_API,
  DEIS_PLATFORM,
  'Svc-Release',
  'X-Svc-Release',
  'X-Request-Id',
  'Retry-After',
  'WWW-Authenticate',
  'Allow',
] as const;

/** Request headers a browser client may send. */
export const ALLOWED_REQUEST_HEADERS = [
  'Authorization',
  'Content-Type',
  'SVC_API_VERSION',
  'Svc-Api-Version',
  'X_SVC_API_VERSION',
  'Svc-Version',
  'X-Svc-Version',
  'X-Request-Id',
] as const;

/** Methods the API uses anywhere. */
export const ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'] as const;

/** Sets the API and platform version headers the policy calls for, removing any set before. */
export function applyVersionHeaders(res: Response, policy: VersionPolicy, platformVersion: string): void {
  for (const name of [API, PLATFORM, X_API, X_PLATFORM, DEIS_API, DEIS_PLATFORM]) res.removeHeader(name);
  if (policy.versionHeaders === 'none') return;
  res.setHeader(X_API, policy.version);
  res.setHeader(X_PLATFORM, platformVersion);
  if (policy.versionHeaders === 'both') {
    res.setHeader(API, policy.version);
    res.setHeader(PLATFORM, platformVersion);
  }
  if (policy.deisVersionHeaders) {
    res.setHeader(DEIS_API, policy.version);
    res.setHeader(DEIS_PLATFORM, platformVersion);
  }
}

/** Announces the number of a release just created under every name the policy uses. */
export function applyReleaseHeaders(res: Response, policy: VersionPolicy, releaseVersion: number): void {
  for (const name of policy.releaseHeaders) res.setHeader(name, String(releaseVersion));
}
