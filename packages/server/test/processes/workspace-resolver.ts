/*
 * Preloaded (`node -r`) into controller processes started from a transpiled copy of the
 * workspace: `@svc/<package>` resolves to that copy's sources instead of each package's
 * `dist`, which may be missing or stale while tests run. Everything else resolves as usual
 * (third-party packages through NODE_PATH).
 */
import Module from 'node:module';
import { join } from 'node:path';

type ResolveFilename = (request: string, parent: unknown, isMain: boolean, options?: unknown) => string;

const loader = Module as unknown as { _resolveFilename: ResolveFilename };
const original = loader._resolveFilename;
const WORKSPACE = /^@svc\/([a-z0-9-]+)(\/testing)?$/;

loader._resolveFilename = function resolveWorkspace(request, parent, isMain, options) {
  const match = WORKSPACE.exec(request);
  const target =
    match === null ? request : join(__dirname, 'packages', match[1] as string, 'src', match[2] === undefined ? 'index.js' : 'testing/index.js');
  return original.call(this, target, parent, isMain, options);
};
