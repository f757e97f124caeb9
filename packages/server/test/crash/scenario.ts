import { startController, type ControllerProcess } from '../processes/controller-process';
import { call, registerAndLogin, type Reply } from '../processes/http';
import type { WorkspaceBuild } from '../processes/workspace-build';

/** Reads the database directly once the scenario is over, to check what the API cannot show. */
export interface DatabaseInspector {
  /** Runs `sql` with `?` placeholders and resolves with its rows. */
  query(sql: string, params: unknown[]): Promise<Array<Record<string, unknown>>>;
  close(): Promise<void>;
}

/** How one crash scenario runs. */
export interface CrashScenarioOptions {
  build: WorkspaceBuild;
  /** DATA_DIR, and DATABASE_URL for PostgreSQL. */
  env: Record<string, string>;
  /** Seeds the choice of operations and the moments of the kills. */
  seed: number;
  /** How many times the controller is killed with SIGKILL. */
  kills: number;
  /** Concurrent clients writing. */
  clients: number;
  /** Each run lasts a random time in this range (ms) before the kill. */
  runMs: [number, number];
  inspector: () => Promise<DatabaseInspector>;
}

/** What a scenario did and found. */
export interface CrashReport {
  kills: number;
  acknowledged: { apps: number; configs: number; builds: number; rollbacks: number };
  /** Requests cut off by a kill: their outcome is unknown, so nothing is asserted about them. */
  interrupted: number;
  /** Everything found wrong; empty when every acknowledged write survived intact. */
  problems: string[];
}

/** A release that a write created and the server acknowledged. */
interface AckedRelease {
  app: string;
  version: number;
  kind: 'config' | 'build' | 'rollback';
  /** config: the variable set and its value; build: the image; rollback: the target version. */
  key?: string;
  value?: string;
  image?: string;
  target?: number;
}

/** A small seeded generator (mulberry32): the same seed gives the same choices. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Drives a stream of writes (app creations, config changes, builds, rollbacks) from several
 * clients at a controller process, kills it with SIGKILL at seeded random moments and starts
 * it again on the same data, `kills` times; then starts it once more and checks that every
 * acknowledged write is there, that versions are contiguous per app, and that no release
 * lacks its config or build.
 */
export async function runCrashScenario(options: CrashScenarioOptions): Promise<CrashReport> {
  const random = seeded(options.seed);
  const apps: string[] = [];
  const releases: AckedRelease[] = [];
  let interrupted = 0;
  let counter = 0;
  let server: ControllerProcess = await startController(options.build, { env: options.env });
  const token = await registerAndLogin(server.url, 'crash-admin');

  const record = (app: string, reply: Reply, release: Omit<AckedRelease, 'app' | 'version'>): void => {
    const version = release.kind === 'rollback' ? (reply.body as { version?: unknown }).version : Number(reply.release);
    if (typeof version === 'number' && Number.isInteger(version)) releases.push({ app, version, ...release });
  };

  /** One write chosen by the generator; resolves false once the server is gone. */
  const write = async (client: number): Promise<boolean> => {
    const roll = random();
    counter += 1;
    const n = counter;
    const app = apps.length === 0 || roll < 0.15 ? null : (apps[Math.floor(random() * apps.length)] as string);
    try {
      if (app === null) {
        const id = `crash-${client}-${n}`;
        const reply = await call(server.url, 'POST', '/v1/apps', token, { id });
        if (reply.status === 201) apps.push(id);
      } else if (roll < 0.6) {
        const key = `KEY_${n}`;
        const value = `value-${n}`;
        const reply = await call(server.url, 'POST', `/v1/apps/${app}/config`, token, { values: { [key]: value } });
        if (reply.status === 201) record(app, reply, { kind: 'config', key, value });
      } else if (roll < 0.85) {
        const image = `registry.example.com/${app}:build-${n}`;
        const reply = await call(server.url, 'POST', `/v1/apps/${app}/builds`, token, { image, procfile: { web: 'serve' } });
        if (reply.status === 201) record(app, reply, { kind: 'build', image });
      } else {
        const reply = await call(server.url, 'POST', `/v1/apps/${app}/releases/rollback`, token, {});
        // A rollback of an app with a single release is refused (400): nothing was written.
        if (reply.status === 201) record(app, reply, { kind: 'rollback' });
      }
      return true;
    } catch {
      interrupted += 1;
      return false;
    }
  };

  for (let kill = 0; kill <= options.kills; kill++) {
    if (kill > 0) server = await startController(options.build, { env: options.env });
    if (kill === options.kills) break;
    const [min, max] = options.runMs;
    const killAfter = min + Math.floor(random() * (max - min));
    let alive = true;
    const clients = Array.from({ length: options.clients }, async (_, client) => {
      let serving = true;
      while (alive && serving) serving = await write(client);
    });
    await pause(killAfter);
    await server.kill('SIGKILL');
    alive = false;
    await Promise.all(clients);
  }

  const problems = await verify(server.url, token, apps, releases, options.inspector);
  await server.stop();
  const count = (kind: AckedRelease['kind']): number => releases.filter((r) => r.kind === kind).length;
  return {
    kills: options.kills,
    acknowledged: { apps: apps.length, configs: count('config'), builds: count('build'), rollbacks: count('rollback') },
    interrupted,
    problems,
  };
}

async function verify(
  url: string,
  token: string,
  apps: string[],
  releases: AckedRelease[],
  openInspector: () => Promise<DatabaseInspector>,
): Promise<string[]> {
  const problems: string[] = [];
  for (const app of apps) {
    const found = await call(url, 'GET', `/v1/apps/${app}`, token);
    if (found.status !== 200) problems.push(`acknowledged app ${app} answers ${found.status}`);
    const listed = await call(url, 'GET', `/v1/apps/${app}/releases?page_size=1000`, token);
    const versions = ((listed.body as { results?: Array<{ version: number }> }).results ?? []).map((r) => r.version).sort((a, b) => a - b);
    const contiguous = versions.every((version, i) => version === i + 1);
    if (versions.length === 0 || !contiguous) problems.push(`${app}: release versions are not 1..n: ${versions.join(',')}`);
  }
  for (const release of releases) {
    const found = await call(url, 'GET', `/v1/apps/${release.app}/releases/v${release.version}`, token);
    const summary = String((found.body as { summary?: unknown }).summary ?? '');
    const expected =
      release.kind === 'config' ? ` added ${release.key}` : release.kind === 'build' ? ` deployed ${release.image}` : ' rolled back to v';
    if (found.status !== 200) problems.push(`acknowledged ${release.kind} release ${release.app} v${release.version} answers ${found.status}`);
    else if (!summary.includes(expected as string)) {
      problems.push(`${release.app} v${release.version} is not the acknowledged ${release.kind}: "${summary}"`);
    }
  }

  const db = await openInspector();
  try {
    const withoutConfig = await db.query(
      'SELECT r.app, r.version FROM releases r LEFT JOIN configs c ON c.uuid = r.config WHERE c.uuid IS NULL',
      [],
    );
    const withoutBuild = await db.query(
      'SELECT r.app, r.version FROM releases r LEFT JOIN builds b ON b.uuid = r.build WHERE r.build IS NOT NULL AND b.uuid IS NULL',
      [],
    );
    for (const row of withoutConfig) problems.push(`${String(row.app)} v${String(row.version)} has no config`);
    for (const row of withoutBuild) problems.push(`${String(row.app)} v${String(row.version)} has no build`);
    for (const release of releases) {
      if (release.kind === 'config') {
        const [row] = await db.query(
          'SELECT c."values" AS "values" FROM releases r JOIN configs c ON c.uuid = r.config WHERE r.app = ? AND r.version = ?',
          [release.app, release.version],
        );
        const raw = row?.values;
        const values = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Record<string, string> | undefined;
        if (values?.[release.key as string] !== release.value) {
          problems.push(`${release.app} v${release.version}: config lacks the acknowledged ${release.key}`);
        }
      } else if (release.kind === 'build') {
        const [row] = await db.query(
          'SELECT b.image FROM releases r JOIN builds b ON b.uuid = r.build WHERE r.app = ? AND r.version = ?',
          [release.app, release.version],
        );
        if (row?.image !== release.image) problems.push(`${release.app} v${release.version}: build lacks the acknowledged image`);
      }
    }
  } finally {
    await db.close();
  }
  return problems;
}
