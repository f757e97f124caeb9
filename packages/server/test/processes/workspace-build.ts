import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

/** The repository root, three levels above this folder. */
export const REPOSITORY_ROOT = join(__dirname, '..', '..', '..', '..');

/** A runnable copy of the workspace: every package's sources compiled to JavaScript. */
export interface WorkspaceBuild {
  /** The folder holding `packages/<name>/src/**.js` and the resolver. */
  root: string;
  /** The server's entry point in the copy. */
  main: string;
  /** The file to preload with `node -r` so that `@svc/*` resolves inside the copy. */
  resolver: string;
  /** NODE_PATH for the processes: third-party packages come from the repository. */
  nodePath: string;
}

// What the packages' own builds use, minus type checking: transpiling only is what keeps this fast.
const COMPILER_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.CommonJS,
  target: ts.ScriptTarget.ES2022,
  esModuleInterop: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  useDefineForClassFields: false,
};

async function sourcesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await sourcesUnder(path)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

let pending: Promise<WorkspaceBuild> | null = null;

/**
 * Transpiles every `packages/<name>/src` of the repository (and the resolver) into a folder
 * under the system's temporary directory, named by a hash of the sources, so that runs with
 * unchanged sources reuse it and concurrent test files never see a half-written copy.
 * Controller processes start from it in well under a second, without a prior `npm run build`.
 */
export function buildWorkspace(): Promise<WorkspaceBuild> {
  pending ??= build();
  return pending;
}

async function build(): Promise<WorkspaceBuild> {
  const packagesDir = join(REPOSITORY_ROOT, 'packages');
  const packages = (await readdir(packagesDir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  const resolverSource = join(__dirname, 'workspace-resolver.ts');
  const files: Array<{ source: string; target: string }> = [{ source: resolverSource, target: 'resolver.js' }];
  for (const name of packages) {
    const src = join(packagesDir, name, 'src');
    if (!existsSync(src)) continue;
    for (const source of (await sourcesUnder(src)).sort()) {
      files.push({ source, target: relative(REPOSITORY_ROOT, source).replace(/\.ts$/, '.js') });
    }
  }

  const hash = createHash('sha256').update(ts.version).update(JSON.stringify(COMPILER_OPTIONS));
  const contents = new Map<string, string>();
  for (const file of files) {
    const text = await readFile(file.source, 'utf8');
    contents.set(file.source, text);
    hash.update(file.target).update('\0').update(text).update('\0');
  }
  const root = join(tmpdir(), `svc-controller-build-${hash.digest('hex').slice(0, 16)}`);
  const result: WorkspaceBuild = {
    root,
    main: join(root, 'packages', 'server', 'src', 'main.js'),
    resolver: join(root, 'resolver.js'),
    nodePath: join(REPOSITORY_ROOT, 'node_modules'),
  };
  if (existsSync(join(root, 'complete'))) return result;

  const staging = `${root}.staging-${process.pid}-${randomBytes(4).toString('hex')}`;
  for (const file of files) {
    const output = ts.transpileModule(contents.get(file.source) as string, { compilerOptions: COMPILER_OPTIONS, fileName: file.source });
    const target = join(staging, file.target);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, output.outputText);
  }
  // The server reads its version from its package.json.
  for (const name of packages) {
    const manifest = join(packagesDir, name, 'package.json');
    if (existsSync(manifest)) await copyFile(manifest, join(staging, 'packages', name, 'package.json')).catch(() => undefined);
  }
  await writeFile(join(staging, 'complete'), '');
  try {
    await rename(staging, root);
  } catch (error) {
    // Another test file built the same sources first: use its copy.
    await rm(staging, { recursive: true, force: true });
    if (!existsSync(join(root, 'complete'))) throw error;
  }
  await removeOldBuilds(root);
  return result;
}

const STALE_AFTER_MS = 24 * 3600 * 1000;

/** Copies of earlier sources pile up as the code changes; those untouched for a day go. */
async function removeOldBuilds(current: string): Promise<void> {
  const prefix = 'svc-controller-build-';
  for (const name of await readdir(tmpdir())) {
    const path = join(tmpdir(), name);
    if (!name.startsWith(prefix) || path === current) continue;
    try {
      if (Date.now() - (await stat(path)).mtimeMs > STALE_AFTER_MS) await rm(path, { recursive: true, force: true });
    } catch {
      // Removed by another run meanwhile.
    }
  }
}
