import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Compiles the packages the example uses (tsc -b, incremental): slow on a loaded machine.
jest.setTimeout(600_000);

const ROOT = join(__dirname, '..', '..', '..');
const EXAMPLE = join(ROOT, 'examples', 'embed');

describe('examples/embed, the core embedded in a Node.js program (docs/embedding.md)', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-embed-test-'));
    // As an embedder does: compile, then run the output, which finds the @svc/* packages through
    // node_modules and their package.json `main` (dist/), not through the tests' path mapping.
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-b', EXAMPLE], { cwd: ROOT, stdio: 'pipe' });
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('registers, creates an app, sets config and reads the release back, on SQLite', () => {
    const outcome = spawnSync(process.execPath, [join(EXAMPLE, 'dist', 'main.js'), dataDir], { cwd: tmpdir(), encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect({ status: outcome.status, stderr: outcome.stderr }).toEqual({ status: 0, stderr: '' });
    expect(outcome.stdout.split('\n')).toEqual([
      'registered alice (administrator: true)',
      'created app myapp',
      'config set: release v2',
      'release v2: alice added GREETING',
      'config of v2: {"GREETING":"hello"}',
      'releases: v2 v1',
      'refused: RESOURCE.ALREADY_EXISTS (invalid)',
      '',
    ]);
    // The data is where the embedder said: the SQLite file and the app logs.
    expect(existsSync(join(dataDir, 'controller.sqlite'))).toBe(true);
    expect(existsSync(join(dataDir, 'logs'))).toBe(true);
  });

  it('keeps what it wrote: a second run on the same data finds alice taken', () => {
    const again = spawnSync(process.execPath, [join(EXAMPLE, 'dist', 'main.js'), dataDir], { cwd: tmpdir(), encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/alice|already/i);
  });
});
