import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { API_VERSIONS } from '@svc/core';
import { openApiDocument, openApiPath, operationKey, routeTable } from '../src';
import { PLATFORM_VERSION, harness } from './harness';

describe('OpenAPI document', () => {
  const routes = routeTable();
  const doc = openApiDocument(routes, PLATFORM_VERSION) as { openapi: string; paths: Record<string, Record<string, Record<string, unknown>>> };

  it('is a valid OpenAPI 3.1 document (checked by an OpenAPI schema validator, run as its command-line tool)', () => {
    expect(doc.openapi).toBe('3.1.0');
    const dir = mkdtempSync(join(tmpdir(), 'svc-openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(doc));
      // The validator is an ES module; its own command line runs it outside Jest's CommonJS.
      const cli = require.resolve('@seriousme/openapi-schema-validator/bin/validate-api-cli.js');
      const outcome = spawnSync(process.execPath, [cli, file], { encoding: 'utf8' });
      expect(outcome.stderr).toBe('');
      expect(JSON.parse(outcome.stdout)).toEqual({ valid: true });
      expect(outcome.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('documents every route of the application, and nothing else', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual(routes.map((r) => `${r.method.toUpperCase()} ${openApiPath(r.path)}`).sort());
  });

  it('refuses to build when a route has no documentation (it cannot drift from the code)', () => {
    expect(() => openApiDocument([...routes, { method: 'get', path: '/v1/new-thing', auth: 'required' }], PLATFORM_VERSION)).toThrow(
      /undocumented GET \/v1\/new-thing/,
    );
    expect(() => openApiDocument(routes.slice(1), PLATFORM_VERSION)).toThrow(new RegExp(`no such route ${operationKey(routes[0]!)}`));
  });

  it('says from which version each endpoint exists', () => {
    expect(doc.paths['/v1/certs']?.get?.['x-svc-since']).toBe('1.2');
    expect(doc.paths['/v1/users']?.get?.['x-svc-since']).toBe('1.3');
    expect(doc.paths['/v1/auth/tokens']?.post?.['x-svc-versions']).toEqual(['1.5', '1.6', '1.7']);
    expect(doc.paths['/v1/apps']?.get?.['x-svc-versions']).toEqual([...API_VERSIONS]);
    expect(doc.paths['/v1/apps/{id}']?.post?.['x-svc-since']).toBe('1.7');
  });

  it('marks the open endpoints as needing no token', () => {
    for (const path of ['/healthz', '/readyz', '/v1/openapi.json', '/v1/auth/login']) expect(doc.paths[path]?.[path === '/v1/auth/login' ? 'post' : 'get']?.security).toEqual([]);
    expect(doc.paths['/v1/apps']?.get?.security).toBeUndefined();
  });

  it.each(['/v1/openapi.json', '/v1/openapi.json/'])('is served at %s without a token, at every version', async (path) => {
    const h = harness();
    for (const version of ['1.0', '1.7']) {
      const res = await request(h.app).get(path).set('SVC_API_VERSION', version).expect(200);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      expect(res.body).toEqual(JSON.parse(JSON.stringify(doc)));
    }
  });
});
