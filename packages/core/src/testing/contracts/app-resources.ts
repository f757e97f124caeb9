/// <reference types="jest" />
import type { UnitOfWork } from '../../ports/repositories';
import {
  aBuild,
  aConfig,
  aContainer,
  aDomain,
  aRelease,
  at,
  expectAlreadyExists,
  expectVersionTaken,
  nextUuid,
  seedApp,
  seedUser,
} from './fixtures';

const ALL = { offset: 0, limit: 100 };

/** Every test here starts with users alice and bob and apps myapp and other, both alice's. */
function seedTwoApps(uow: () => UnitOfWork): void {
  beforeEach(async () => {
    const repos = uow().repositories;
    await seedUser(repos, 'alice');
    await seedUser(repos, 'bob');
    await seedApp(repos, 'myapp', 'alice');
    await seedApp(repos, 'other', 'alice');
  });
}

/** Contracts of ConfigRepository. */
export function describeConfigs(uow: () => UnitOfWork): void {
  describe('ConfigRepository', () => {
    seedTwoApps(uow);

    it('create then findByUuid returns every field, empty objects included', async () => {
      const repos = uow().repositories;
      const config = aConfig('myapp', 'alice');

      await repos.configs.create(config);

      expect(await repos.configs.findByUuid(config.uuid)).toEqual(config);
    });

    it('create then findByUuid returns values, limits and tags', async () => {
      const repos = uow().repositories;
      const config = aConfig('myapp', 'bob', {
        values: { DATABASE_URL: 'postgres://db/x?a=1&b=2', EMPTY: '', QUOTE: 'say "hi"\n', UNICODE: 'héllo ✓' },
        memory: { web: '512M', worker: '1G' },
        cpu: { web: 512, worker: 0 },
        tags: { region: 'eu_west', tier: 'gold' },
        created: at(40, 1),
        updated: at(41, 2),
      });

      await repos.configs.create(config);
      const found = await repos.configs.findByUuid(config.uuid);

      expect(found).toEqual(config);
      expect(found?.created).toBeInstanceOf(Date);
    });

    it('findByUuid of an unknown uuid returns null', async () => {
      expect(await uow().repositories.configs.findByUuid(nextUuid())).toBeNull();
    });
  });
}

/** Contracts of BuildRepository. */
export function describeBuilds(uow: () => UnitOfWork): void {
  describe('BuildRepository', () => {
    seedTwoApps(uow);

    it('create then findByUuid returns every field', async () => {
      const repos = uow().repositories;
      const build = aBuild('myapp', 'bob', {
        image: 'registry.example.com/myapp@sha256:abc',
        dockerfile: 'FROM scratch\nCMD ["/app"]\n',
        procfile: { web: 'node server.js --port $PORT', worker: 'node worker.js' },
        sha: 'c0ffee1234567',
      });

      await repos.builds.create(build);
      const found = await repos.builds.findByUuid(build.uuid);

      expect(found).toEqual(build);
      expect(found?.updated).toBeInstanceOf(Date);
    });

    it('keeps the working directory of a source build', async () => {
      const repos = uow().repositories;
      const build = aBuild('myapp', 'bob', { sha: 'c0ffee1234567890c0ffee1234567890c0ffee12', workdir: '/srv/svc/builds/myapp/c0ffee1234567890c0ffee1234567890c0ffee12' });

      await repos.builds.create(build);

      expect(await repos.builds.findByUuid(build.uuid)).toEqual(build);
    });

    it('findByUuid of an unknown uuid returns null', async () => {
      expect(await uow().repositories.builds.findByUuid(nextUuid())).toBeNull();
    });

    it('listForApp returns the app’s builds newest first, paged with the count', async () => {
      const repos = uow().repositories;
      const builds = [at(30, 5), at(10, 1), at(30, 4), at(20)].map((created) =>
        aBuild('myapp', 'alice', { created, updated: created }),
      );
      for (const build of builds) await repos.builds.create(build);
      await repos.builds.create(aBuild('other', 'alice', { created: at(25) }));

      const all = await repos.builds.listForApp('myapp', ALL);
      const page = await repos.builds.listForApp('myapp', { offset: 1, limit: 2 });

      expect(all.count).toBe(4);
      expect(all.items.map((b) => b.created)).toEqual([at(30, 5), at(30, 4), at(20), at(10, 1)]);
      expect(all.items[0]).toEqual(builds[0]);
      expect(page).toEqual({ count: 4, items: all.items.slice(1, 3) });
    });

    it('listForApp of an app without builds is empty', async () => {
      expect(await uow().repositories.builds.listForApp('myapp', ALL)).toEqual({ count: 0, items: [] });
    });
  });
}

/** Contracts of ReleaseRepository. */
export function describeReleases(uow: () => UnitOfWork): void {
  describe('ReleaseRepository', () => {
    seedTwoApps(uow);

    it('create then findByVersion returns every field, with a null build', async () => {
      const repos = uow().repositories;
      const release = aRelease('myapp', 'alice', 1, { summary: 'alice created initial release' });

      await repos.releases.create(release);
      const found = await repos.releases.findByVersion('myapp', 1);

      expect(found).toEqual(release);
      expect(found?.build).toBeNull();
      expect(found?.created).toBeInstanceOf(Date);
    });

    it('create then findByVersion returns the build reference', async () => {
      const repos = uow().repositories;
      const build = aBuild('myapp', 'alice');
      await repos.builds.create(build);
      const release = aRelease('myapp', 'bob', 2, { build: build.uuid, summary: 'bob deployed c0ffee1' });

      await repos.releases.create(release);

      expect(await repos.releases.findByVersion('myapp', 2)).toEqual(release);
    });

    it('create with a taken (app, version) throws ReleaseVersionTaken and keeps the first', async () => {
      const repos = uow().repositories;
      const first = aRelease('myapp', 'alice', 1);
      await repos.releases.create(first);

      await expectVersionTaken(repos.releases.create(aRelease('myapp', 'bob', 1)));
      expect(await repos.releases.findByVersion('myapp', 1)).toEqual(first);
    });

    it('the same version may exist in different apps', async () => {
      const repos = uow().repositories;
      await repos.releases.create(aRelease('myapp', 'alice', 1));
      await repos.releases.create(aRelease('other', 'alice', 1));

      expect(await repos.releases.findByVersion('other', 1)).not.toBeNull();
    });

    it('findByVersion of an unknown version or app returns null', async () => {
      const repos = uow().repositories;
      await repos.releases.create(aRelease('myapp', 'alice', 1));

      expect(await repos.releases.findByVersion('myapp', 2)).toBeNull();
      expect(await repos.releases.findByVersion('other', 1)).toBeNull();
    });

    it('latest returns the highest version of the app', async () => {
      const repos = uow().repositories;
      for (const version of [2, 10, 1, 9]) await repos.releases.create(aRelease('myapp', 'alice', version));
      await repos.releases.create(aRelease('other', 'alice', 11));

      expect((await repos.releases.latest('myapp'))?.version).toBe(10);
    });

    it('latest of an app without releases returns null', async () => {
      expect(await uow().repositories.releases.latest('myapp')).toBeNull();
    });

    it('listForApp returns the app’s releases highest version first, paged with the count', async () => {
      const repos = uow().repositories;
      for (const version of [3, 1, 12, 2]) await repos.releases.create(aRelease('myapp', 'alice', version));
      await repos.releases.create(aRelease('other', 'alice', 5));

      const all = await repos.releases.listForApp('myapp', ALL);
      const page = await repos.releases.listForApp('myapp', { offset: 1, limit: 2 });
      const past = await repos.releases.listForApp('myapp', { offset: 4, limit: 2 });

      expect(all.count).toBe(4);
      expect(all.items.map((r) => r.version)).toEqual([12, 3, 2, 1]);
      expect(page).toEqual({ count: 4, items: all.items.slice(1, 3) });
      expect(past).toEqual({ count: 4, items: [] });
    });

    it('listForApp counts start over for an app deleted and created again', async () => {
      const repos = uow().repositories;
      for (const version of [1, 2, 3]) await repos.releases.create(aRelease('myapp', 'alice', version));
      await repos.builds.create(aBuild('myapp', 'alice'));

      await repos.apps.delete('myapp');
      await seedApp(repos, 'myapp', 'bob');
      await repos.releases.create(aRelease('myapp', 'bob', 1));

      expect((await repos.releases.listForApp('myapp', ALL)).count).toBe(1);
      expect(await repos.builds.listForApp('myapp', ALL)).toEqual({ count: 0, items: [] });
    });

    it('a release that loses the race for its version leaves the count as it was', async () => {
      const repos = uow().repositories;
      await repos.releases.create(aRelease('myapp', 'alice', 1));

      await expectVersionTaken(repos.releases.create(aRelease('myapp', 'alice', 1)));

      expect((await repos.releases.listForApp('myapp', ALL)).count).toBe(1);
    });
  });
}

/** Contracts of ContainerRepository. */
export function describeContainers(uow: () => UnitOfWork): void {
  describe('ContainerRepository', () => {
    seedTwoApps(uow);

    async function seedFleet(): Promise<void> {
      const repos = uow().repositories;
      // Created out of order, with ties on created broken by type then num.
      const specs: Array<[string, number, Date]> = [
        ['worker', 1, at(10)],
        ['web', 2, at(10)],
        ['run', 1, at(5)],
        ['web', 1, at(10)],
        ['web', 10, at(10)],
        ['web', 3, at(2)],
        ['run', 2, at(20)],
      ];
      for (const [type, num, created] of specs) {
        await repos.containers.create(aContainer('myapp', 'alice', { type, num, created, updated: created }));
      }
      await repos.containers.create(aContainer('other', 'alice', { type: 'web', num: 1, created: at(1) }));
    }

    const label = (c: { type: string; num: number }): string => `${c.type}.${c.num}`;

    it('create then findByUuid returns every field', async () => {
      const repos = uow().repositories;
      const container = aContainer('myapp', 'bob', {
        release: 7,
        type: 'worker-high',
        num: 3,
        state: 'initialized',
        created: at(12, 345),
        updated: at(13, 678),
      });

      await repos.containers.create(container);
      const found = await repos.containers.findByUuid(container.uuid);

      expect(found).toEqual(container);
      expect(found?.created).toBeInstanceOf(Date);
    });

    it('findByUuid of an unknown uuid returns null', async () => {
      expect(await uow().repositories.containers.findByUuid(nextUuid())).toBeNull();
    });

    it('listForApp without a filter returns non-run containers oldest first, then by type and num', async () => {
      await seedFleet();

      const listed = await uow().repositories.containers.listForApp('myapp');

      expect(listed.map(label)).toEqual(['web.3', 'web.1', 'web.2', 'web.10', 'worker.1']);
    });

    it('listForApp with includeRun adds run containers in the same order', async () => {
      await seedFleet();

      const listed = await uow().repositories.containers.listForApp('myapp', { includeRun: true });

      expect(listed.map(label)).toEqual(['web.3', 'run.1', 'web.1', 'web.2', 'web.10', 'worker.1', 'run.2']);
    });

    it('listForApp with a type returns that type only, run included when asked for', async () => {
      await seedFleet();
      const repos = uow().repositories;

      expect((await repos.containers.listForApp('myapp', { type: 'web' })).map(label)).toEqual([
        'web.3',
        'web.1',
        'web.2',
        'web.10',
      ]);
      expect((await repos.containers.listForApp('myapp', { type: 'run' })).map(label)).toEqual(['run.1', 'run.2']);
      expect(await repos.containers.listForApp('myapp', { type: 'missing' })).toEqual([]);
    });

    it('pageForApp applies the filter, then pages with the count', async () => {
      await seedFleet();
      const repos = uow().repositories;

      const page = await repos.containers.pageForApp('myapp', {}, { offset: 1, limit: 2 });
      const withRun = await repos.containers.pageForApp('myapp', { includeRun: true }, { offset: 0, limit: 3 });
      const runs = await repos.containers.pageForApp('myapp', { type: 'run' }, { offset: 1, limit: 5 });
      const past = await repos.containers.pageForApp('myapp', { type: 'web' }, { offset: 4, limit: 5 });

      expect(page.count).toBe(5);
      expect(page.items.map(label)).toEqual(['web.1', 'web.2']);
      expect(withRun.count).toBe(7);
      expect(withRun.items.map(label)).toEqual(['web.3', 'run.1', 'web.1']);
      expect(runs.count).toBe(2);
      expect(runs.items.map(label)).toEqual(['run.2']);
      expect(past).toEqual({ count: 4, items: [] });
    });

    it('updateState changes the state and updated time of that container only', async () => {
      const repos = uow().repositories;
      const container = aContainer('myapp', 'alice', { state: 'created' });
      const sibling = aContainer('myapp', 'alice', { num: 2, state: 'created' });
      await repos.containers.create(container);
      await repos.containers.create(sibling);

      await repos.containers.updateState(container.uuid, 'crashed', at(60, 606));

      expect(await repos.containers.findByUuid(container.uuid)).toEqual({
        ...container,
        state: 'crashed',
        updated: at(60, 606),
      });
      expect(await repos.containers.findByUuid(sibling.uuid)).toEqual(sibling);
    });

    it('delete removes that container only', async () => {
      const repos = uow().repositories;
      const container = aContainer('myapp', 'alice');
      const sibling = aContainer('myapp', 'alice', { num: 2 });
      await repos.containers.create(container);
      await repos.containers.create(sibling);

      await repos.containers.delete(container.uuid);

      expect(await repos.containers.findByUuid(container.uuid)).toBeNull();
      expect(await repos.containers.listForApp('myapp')).toEqual([sibling]);
    });
  });
}

/** Contracts of DomainRepository. */
export function describeDomains(uow: () => UnitOfWork): void {
  describe('DomainRepository', () => {
    seedTwoApps(uow);

    it('create then find returns every field', async () => {
      const repos = uow().repositories;
      const domain = aDomain('myapp', 'www.example.com', 'bob', { created: at(70, 7), updated: at(71, 8) });

      await repos.domains.create(domain);
      const found = await repos.domains.find('www.example.com');

      expect(found).toEqual(domain);
      expect(found?.created).toBeInstanceOf(Date);
    });

    it('find of an unknown domain returns null', async () => {
      expect(await uow().repositories.domains.find('nowhere.example.com')).toBeNull();
    });

    it('create with a taken domain throws AlreadyExists on domain, also from another app', async () => {
      const repos = uow().repositories;
      await repos.domains.create(aDomain('myapp', 'example.com', 'alice'));

      await expectAlreadyExists(repos.domains.create(aDomain('myapp', 'example.com', 'alice')), 'domain');
      await expectAlreadyExists(repos.domains.create(aDomain('other', 'example.com', 'alice')), 'domain');
      expect((await repos.domains.find('example.com'))?.app).toBe('myapp');
    });

    it('listForApp returns the app’s domains ordered by domain, paged with the count', async () => {
      const repos = uow().repositories;
      for (const name of ['www.example.com', 'api.example.com', 'example.com', 'b.example.org']) {
        await repos.domains.create(aDomain('myapp', name, 'alice'));
      }
      await repos.domains.create(aDomain('other', 'aaa.example.net', 'alice'));

      const all = await repos.domains.listForApp('myapp', ALL);
      const page = await repos.domains.listForApp('myapp', { offset: 2, limit: 5 });

      expect(all.count).toBe(4);
      expect(all.items.map((d) => d.domain)).toEqual([
        'api.example.com',
        'b.example.org',
        'example.com',
        'www.example.com',
      ]);
      expect(page).toEqual({ count: 4, items: all.items.slice(2) });
    });

    it("listAfter returns every app's domains ordered by domain, in keyset pages that start after the given domain", async () => {
      const repos = uow().repositories;
      for (const name of ['www.example.com', 'example.com']) await repos.domains.create(aDomain('myapp', name, 'alice'));
      await repos.domains.create(aDomain('other', 'aaa.example.net', 'alice'));

      const all = await repos.domains.listAfter(null, 10);

      expect(all.map((d) => [d.domain, d.app])).toEqual([
        ['aaa.example.net', 'other'],
        ['example.com', 'myapp'],
        ['www.example.com', 'myapp'],
      ]);
      expect(all[0]).toEqual(await repos.domains.find('aaa.example.net'));
      expect(await repos.domains.listAfter(null, 1)).toEqual(all.slice(0, 1));
      expect(await repos.domains.listAfter('aaa.example.net', 1)).toEqual(all.slice(1, 2));
      // A key that is no domain (one deleted since the page before) still starts after it.
      expect(await repos.domains.listAfter('example.comz', 10)).toEqual(all.slice(2));
      expect(await repos.domains.listAfter('www.example.com', 10)).toEqual([]);
    });

    it('delete removes that domain and frees the name', async () => {
      const repos = uow().repositories;
      await repos.domains.create(aDomain('myapp', 'a.example.com', 'alice'));
      await repos.domains.create(aDomain('myapp', 'b.example.com', 'alice'));

      await repos.domains.delete('a.example.com');
      await repos.domains.create(aDomain('other', 'a.example.com', 'alice'));

      expect((await repos.domains.find('a.example.com'))?.app).toBe('other');
      expect((await repos.domains.listForApp('myapp', ALL)).items.map((d) => d.domain)).toEqual(['b.example.com']);
    });
  });
}
