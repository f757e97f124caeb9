import { call, type Reply } from '../processes/http';

/*
 * Quotas raced by many requests sent at the same moment, spread over one or more controller
 * processes on one database: the count that results must be the quota exactly.
 */

/** Requests sent at once in each race. */
export const RACERS = 50;

/**
 * The quotas the races run against (the environment of every controller), and a scheduler
 * that takes up to 30 ms to start a process, as a real one takes time: the requests overlap
 * between their checks and their writes as they would on a real engine.
 */
export const RACE_QUOTAS = {
  SCHEDULER_CHAOS: 'latency=30',
  QUOTA_APPS_PER_USER: '10',
  QUOTA_PROCESSES_PER_USER: '16',
  QUOTA_DOMAINS_PER_APP: '10',
} as const;

const APPS = Number(RACE_QUOTAS.QUOTA_APPS_PER_USER);
const PROCESSES = Number(RACE_QUOTAS.QUOTA_PROCESSES_PER_USER);
const DOMAINS = Number(RACE_QUOTAS.QUOTA_DOMAINS_PER_APP);

/** Controllers that share one database, and the tokens of users registered on them. */
export interface RaceTarget {
  urls: readonly string[];
}

/** Sends `count` requests at once, request i to controller i modulo their number. */
function race(target: RaceTarget, count: number, send: (url: string, i: number) => Promise<Reply>): Promise<Reply[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => send(target.urls[i % target.urls.length] as string, i)));
}

function statuses(replies: Reply[]): Record<number, number> {
  const counted: Record<number, number> = {};
  for (const reply of replies) counted[reply.status] = (counted[reply.status] ?? 0) + 1;
  return counted;
}

async function structureOf(url: string, token: string, app: string): Promise<Record<string, number>> {
  const reply = await call(url, 'GET', `/v1/apps/${app}`, token);
  expect(reply.status).toBe(200);
  return (reply.body as { structure: Record<string, number> }).structure;
}

async function countOf(url: string, token: string, path: string): Promise<number> {
  const reply = await call(url, 'GET', path, token);
  expect(reply.status).toBe(200);
  return (reply.body as { count: number }).count;
}

const sum = (structure: Record<string, number>): number => Object.values(structure).reduce((total, n) => total + n, 0);

/** 50 app creations at once: exactly the apps-per-user quota are created, the others are refused with the contract's 403. */
export async function raceAppCreations(target: RaceTarget, token: string): Promise<void> {
  const replies = await race(target, RACERS, (url, i) => call(url, 'POST', '/v1/apps', token, { id: `created-${i}` }));

  expect(statuses(replies)).toEqual({ 201: APPS, 403: RACERS - APPS });
  for (const reply of replies.filter((r) => r.status === 403)) {
    expect(reply.body).toEqual({ detail: `Quota exceeded: a user may own at most ${APPS} apps.` });
  }
  for (const url of target.urls) expect(await countOf(url, token, '/v1/apps')).toBe(APPS);
}

/** 50 domains added to one app at once: exactly the domains-per-app quota are added. */
export async function raceDomains(target: RaceTarget, token: string, app: string): Promise<void> {
  const replies = await race(target, RACERS, (url, i) => call(url, 'POST', `/v1/apps/${app}/domains`, token, { domain: `d${i}.race.example` }));

  expect(statuses(replies)).toEqual({ 201: DOMAINS, 403: RACERS - DOMAINS });
  expect(await countOf(target.urls[0] as string, token, `/v1/apps/${app}/domains`)).toBe(DOMAINS);
}

/** Creates `count` apps named `<prefix>-<n>`, one after another. */
export async function createApps(target: RaceTarget, token: string, prefix: string, count: number): Promise<string[]> {
  const names = Array.from({ length: count }, (_, n) => `${prefix}-${n}`);
  for (const name of names) expect((await call(target.urls[0] as string, 'POST', '/v1/apps', token, { id: name })).status).toBe(201);
  return names;
}

function deploy(url: string, token: string, app: string, tag: string): Promise<Reply> {
  return call(url, 'POST', `/v1/apps/${app}/builds`, token, { image: `example/${app}:${tag}`, procfile: { web: 'serve' } });
}

/**
 * 10 apps of one user run one process each; 50 scales to web=3 at once, five per app: the
 * user's processes end at the per-user quota exactly.
 */
export async function raceScales(target: RaceTarget, token: string, username: string): Promise<void> {
  const apps = await createApps(target, token, 'scaled', APPS);
  for (const app of apps) expect((await deploy(target.urls[0] as string, token, app, 'v1')).status).toBe(201);

  const replies = await race(target, RACERS, (url, i) => call(url, 'POST', `/v1/apps/${apps[i % apps.length]}/scale`, token, { web: 3 }));

  const refused = replies.filter((r) => r.status === 403);
  expect(replies.filter((r) => r.status !== 204 && r.status !== 403)).toEqual([]);
  for (const reply of refused) {
    expect(reply.body).toEqual({
      detail: expect.stringMatching(new RegExp(`^Quota exceeded: the apps of ${username} may run at most ${PROCESSES} processes together, this would be \\d+\\.$`)),
    });
  }
  const structures = await Promise.all(apps.map((app) => structureOf(target.urls[1 % target.urls.length] as string, token, app)));
  expect(structures.reduce((total, s) => total + sum(s), 0)).toBe(PROCESSES);
  // Each scale that went through grew an app from 1 to 3.
  expect(structures.filter((s) => s.web === 3)).toHaveLength((PROCESSES - APPS) / 2);
  const containers = await Promise.all(apps.map((app) => countOf(target.urls[0] as string, token, `/v1/apps/${app}/containers`)));
  expect(containers.reduce((total, n) => total + n, 0)).toBe(PROCESSES);
}

/**
 * One app of the user runs 10 processes; 50 first deploys of its 9 other apps at once, each
 * starting web=1 by default: exactly 6 apps are deployed, and the 3 refused keep no build,
 * no release past v1 and no container.
 */
export async function raceFirstDeploys(target: RaceTarget, token: string, username: string): Promise<void> {
  const apps = await createApps(target, token, 'first', APPS);
  const [big, ...others] = apps as [string, ...string[]];
  expect((await deploy(target.urls[0] as string, token, big, 'v1')).status).toBe(201);
  expect((await call(target.urls[0] as string, 'POST', `/v1/apps/${big}/scale`, token, { web: 10 })).status).toBe(204);

  const replies = await race(target, RACERS, (url, i) => deploy(url, token, others[i % others.length] as string, `v${i}`));

  expect(replies.filter((r) => r.status !== 201 && r.status !== 403)).toEqual([]);
  for (const reply of replies.filter((r) => r.status === 403)) {
    expect(reply.body).toEqual({ detail: `Quota exceeded: the apps of ${username} may run at most ${PROCESSES} processes together, this would be ${PROCESSES + 1}.` });
  }
  const structures = await Promise.all(apps.map((app) => structureOf(target.urls[1 % target.urls.length] as string, token, app)));
  expect(structures.reduce((total, s) => total + sum(s), 0)).toBe(PROCESSES);
  const deployed = others.filter((_, n) => (structures[n + 1]?.web ?? 0) > 0);
  expect(deployed).toHaveLength(PROCESSES - 10);
  for (const app of others.filter((name) => !deployed.includes(name))) {
    expect(await structureOf(target.urls[0] as string, token, app)).toEqual({});
    expect(await countOf(target.urls[0] as string, token, `/v1/apps/${app}/builds`)).toBe(0);
    expect(await countOf(target.urls[0] as string, token, `/v1/apps/${app}/releases`)).toBe(1);
    expect(await countOf(target.urls[0] as string, token, `/v1/apps/${app}/containers`)).toBe(0);
  }
}
