import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config';

const ROOT = join(__dirname, '..', '..', '..');
const SERVER_SRC = join(ROOT, 'packages', 'server', 'src');
/** The configuration modules: config.ts and its parts (config-<topic>.ts). */
const SOURCES = readdirSync(SERVER_SRC).filter((file) => /^config(-[a-z-]+)?\.ts$/.test(file)).map((file) => join(SERVER_SRC, file));

/** The variables `.env.example` lists: its `NAME=value` lines (comments do not count). */
function listedInEnvExample(): Set<string> {
  const text = readFileSync(join(ROOT, '.env.example'), 'utf8');
  return new Set([...text.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string));
}

/** Every variable `loadConfig` asks its environment for, in a few configurations (each scheduler). */
function readByLoadConfig(): Set<string> {
  const read = new Set<string>();
  const scenarios: Record<string, string>[] = [
    {},
    { SCHEDULER: 'process' },
    { SCHEDULER: 'memory', ACME_DIRECTORY_URL: 'letsencrypt-staging' },
    { SCHEDULER: 'docker' },
    { SCHEDULER: 'swarm', REGISTRY: 'registry.internal:5000', REGISTRY_USERNAME: 'u', REGISTRY_PASSWORD: 'p' },
  ];
  for (const values of scenarios) {
    const env = new Proxy(values, {
      get(target, name) {
        if (typeof name === 'string') read.add(name);
        return target[name as string];
      },
    });
    loadConfig(env);
  }
  return read;
}

/** Every upper-case name the configuration modules spell out (`'PORT'`, `env.SECRET_KEY`). */
function namedInSources(): Set<string> {
  const names = new Set<string>();
  for (const file of SOURCES) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/'([A-Z][A-Z0-9]*_[A-Z0-9_]*|[A-Z]{4,})'|\benv\??\.([A-Z][A-Z0-9_]+)/g)) names.add((m[1] ?? m[2]) as string);
  }
  return names;
}

/** The variables of docs/operations.md's configuration table, one entry per row that names them. */
function rowsOfOperationsTable(): string[] {
  const text = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const start = text.indexOf('\n## Configuration\n');
  const section = text.slice(start, text.indexOf('\n## ', start + 1));
  return [...section.matchAll(/^\| ((?:`[A-Z][A-Z0-9_]*`(?:, )?)+) \|/gm)].flatMap((m) => [...(m[1] as string).matchAll(/`([A-Z0-9_]+)`/g)].map((v) => v[1] as string));
}

describe('.env.example', () => {
  const listed = listedInEnvExample();

  it('lists every variable the configuration reads', () => {
    const read = readByLoadConfig();
    // The recording works: these are read whatever the scheduler.
    expect([...read]).toEqual(expect.arrayContaining(['PORT', 'DATABASE_URL', 'SECRET_KEY', 'SCHEDULER', 'REGISTRY_USERNAME', 'REGISTRY_PASSWORD']));
    expect([...read].filter((name) => !listed.has(name)).sort()).toEqual([]);
  });

  it('lists every variable named in the configuration modules (a setting read on a path the scenarios miss included)', () => {
    const named = namedInSources();
    expect(named.size).toBeGreaterThan(100);
    expect([...named].filter((name) => !listed.has(name)).sort()).toEqual([]);
  });

  it('lists nothing the configuration does not read', () => {
    const known = new Set([...readByLoadConfig(), ...namedInSources()]);
    expect([...listed].filter((name) => !known.has(name)).sort()).toEqual([]);
  });
});

describe('docs/operations.md, "Configuration"', () => {
  const rows = rowsOfOperationsTable();

  it('describes each variable once', () => {
    expect(rows.length).toBeGreaterThan(100);
    expect(rows.filter((name, i) => rows.indexOf(name) !== i).sort()).toEqual([]);
  });

  it('describes every variable .env.example lists', () => {
    const described = new Set(rows);
    expect([...listedInEnvExample()].filter((name) => !described.has(name)).sort()).toEqual([]);
  });
});
