/*
 * Loaded (with ts-node) into a router worker that runs from the TypeScript sources, as the
 * tests run it: the workspace's packages (`@svc/<name>`) resolve to their sources, as they do
 * under the test runner, so that a worker needs no build of the packages it imports. A
 * compiled worker never loads this file.
 */
import * as modules from 'node:module';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

type Resolve = (request: string, parent: unknown, ...rest: unknown[]) => string;
const loader = modules.Module as unknown as { _resolveFilename: Resolve };
const resolveFilename = loader._resolveFilename;

loader._resolveFilename = function resolveFromSources(this: unknown, request: string, parent: unknown, ...rest: unknown[]): string {
  const workspace = /^@svc\/([a-z0-9-]+)$/.exec(request);
  if (workspace !== null) {
    const source = join(__dirname, '..', '..', workspace[1] as string, 'src', 'index.ts');
    if (existsSync(source)) return source;
  }
  return resolveFilename.call(this, request, parent, ...rest);
};
