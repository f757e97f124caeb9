import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Compiles the core's declarations and runs API Extractor four times over them.
jest.setTimeout(300_000);

const ROOT = join(__dirname, '..', '..', '..');
const SCRIPT = join(ROOT, 'scripts', 'api-report.mjs');

/** Runs `node scripts/api-report.mjs <command>` on the copy: its exit status and everything it printed. */
function api(root: string, command: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [SCRIPT, command, '--root', root, '--only', 'core'], { encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

// What CI's `npm run api:check` answers when an export leaves @svc/core, on a copy of the
// package outside the tree: its compiled declarations, its API Extractor settings and the
// root's, and a report made from them. The real tree (its dist/, etc/, .changeset/) is untouched.
describe('the checked public API of @svc/core (scripts/api-report.mjs, ADR 0032)', () => {
  let root: string;
  let core: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'svc-api-report-'));
    core = join(root, 'packages', 'core');
    mkdirSync(core, { recursive: true });
    for (const file of ['api-extractor.base.json', 'tsconfig.base.json']) copyFileSync(join(ROOT, file), join(root, file));
    for (const file of ['package.json', 'tsconfig.json', 'api-extractor.json']) copyFileSync(join(ROOT, 'packages', 'core', file), join(core, file));
    // @types/node, which the core's compiler options name.
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
    const tsc = spawnSync(
      process.execPath,
      [
        require.resolve('typescript/bin/tsc'), '-p', join(ROOT, 'packages', 'core', 'tsconfig.json'),
        '--outDir', join(core, 'dist'), '--tsBuildInfoFile', join(core, 'dist', '.tsbuildinfo'),
        '--emitDeclarationOnly', '--declarationMap', 'false',
      ],
      { encoding: 'utf8' },
    );
    expect({ status: tsc.status, output: `${tsc.stdout}${tsc.stderr}` }).toEqual({ status: 0, output: '' });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('passes while the report and the released declarations match, fails naming a removed export, and asks a major changeset once the report is updated', () => {
    // The report and the release as `npm run api:update` and `npm run api:release` write them.
    expect(api(root, 'update')).toMatchObject({ status: 0, output: expect.stringContaining('wrote packages/core/etc/core.api.md (new)') });
    expect(api(root, 'release')).toMatchObject({ status: 0, output: expect.stringContaining('@svc/core') });
    const released = JSON.parse(readFileSync(join(core, 'etc', 'core.released.json'), 'utf8'));
    expect(released.package).toBe('@svc/core');
    expect(Object.keys(released.declarations)).toEqual(expect.arrayContaining(['class CreateApp', 'function createUseCases']));

    // One export leaves the entry point: the rollback rules' module.
    const entry = join(core, 'dist', 'index.d.ts');
    const exportLine = "export * from './rules/rollbacks';";
    expect(readFileSync(entry, 'utf8')).toContain(exportLine);
    writeFileSync(entry, readFileSync(entry, 'utf8').replace(`${exportLine}\n`, ''));
    const gone = /export declare function (\w+)/.exec(readFileSync(join(core, 'dist', 'rules', 'rollbacks.d.ts'), 'utf8'))?.[1];
    expect(gone).toBeDefined();

    const stale = api(root, 'check');
    expect(stale.status).toBe(1);
    expect(stale.output).toContain('@svc/core: the API report packages/core/etc/core.api.md differs from what the compiled declarations give (removed: ');
    expect(stale.output).toContain(`function ${gone}`);
    expect(stale.output).toContain('run `npm run api:update` and commit packages/core/etc/core.api.md');
    expect(stale.output).toContain(`-export function ${gone}(`);

    // The report updated, the removal is a breaking change: no pending major changeset, no pass.
    expect(api(root, 'update')).toMatchObject({ status: 0, output: expect.stringContaining(`function ${gone}`) });
    const breaking = api(root, 'semver');
    expect(breaking.status).toBe(1);
    expect(breaking.output).toContain('compared with version');
    expect(breaking.output).toContain(`function ${gone}`);
    expect(breaking.output).toContain('no pending changeset raises the major version of @svc/core');
    expect(breaking.output).toContain('npx changeset');

    // A minor changeset does not do; a major one does.
    mkdirSync(join(root, '.changeset'));
    writeFileSync(join(root, '.changeset', 'rollback-rules.md'), '---\n"@svc/core": minor\n---\n\nThe rollback rules leave the public API.\n');
    expect(api(root, 'semver')).toMatchObject({ status: 1, output: expect.stringContaining('(the pending one says minor)') });
    writeFileSync(join(root, '.changeset', 'rollback-rules.md'), '---\n"@svc/core": major\n---\n\nThe rollback rules leave the public API.\n');
    expect(api(root, 'check')).toMatchObject({ status: 0, output: expect.stringContaining('match the compiled declarations and keep the semver rule') });
  });
});
