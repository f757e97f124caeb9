/// <reference types="jest" />
import type { Repositories, UnitOfWork } from '../../ports/repositories';
import {
  aBuild,
  aConfig,
  aContainer,
  aDomain,
  anApp,
  aRelease,
  at,
  expectAlreadyExists,
  seedApp,
  seedUser,
} from './fixtures';

const ALL = { offset: 0, limit: 100 };

/** Gives `app` one record of every kind that lives under an app. */
async function populate(repos: Repositories, app: string, owner: string, collaborator: string): Promise<void> {
  const config = aConfig(app, owner, { values: { NAME: app } });
  const build = aBuild(app, owner);
  await repos.configs.create(config);
  await repos.builds.create(build);
  await repos.releases.create(aRelease(app, owner, 1, { config: config.uuid, build: build.uuid }));
  await repos.containers.create(aContainer(app, owner, { type: 'web', num: 1 }));
  await repos.containers.create(aContainer(app, owner, { type: 'run', num: 1 }));
  await repos.domains.create(aDomain(app, `${app}.example.com`, owner));
  await repos.permissions.grant(app, collaborator);
}

/** Contracts of AppRepository. */
export function describeApps(uow: () => UnitOfWork): void {
  describe('AppRepository', () => {
    beforeEach(async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'alice');
      await seedUser(repos, 'bob');
      await seedUser(repos, 'carol');
    });

    it('create then findById returns every field, with an empty structure', async () => {
      const repos = uow().repositories;
      const app = anApp('myapp', 'alice', { created: at(1, 1), updated: at(2, 2) });

      await repos.apps.create(app);
      const found = await repos.apps.findById('myapp');

      expect(found).toEqual(app);
      expect(found?.created).toBeInstanceOf(Date);
    });

    it('create then findById returns the structure', async () => {
      const repos = uow().repositories;
      const app = anApp('scaled', 'alice', { structure: { web: 3, worker: 0, 'clock-1': 1 } });

      await repos.apps.create(app);

      expect(await repos.apps.findById('scaled')).toEqual(app);
    });

    it('findById of an unknown app returns null', async () => {
      expect(await uow().repositories.apps.findById('nope')).toBeNull();
    });

    it('create with a taken id throws AlreadyExists on id', async () => {
      const repos = uow().repositories;
      await seedApp(repos, 'myapp', 'alice');

      await expectAlreadyExists(repos.apps.create(anApp('myapp', 'bob')), 'id');
      expect((await repos.apps.findById('myapp'))?.owner).toBe('alice');
    });

    it('update writes owner, structure and updated', async () => {
      const repos = uow().repositories;
      const app = await seedApp(repos, 'myapp', 'alice');
      const changed = { ...app, owner: 'bob', structure: { web: 2, cmd: 0 }, updated: at(99, 999) };

      await repos.apps.update(changed);

      expect(await repos.apps.findById('myapp')).toEqual(changed);
    });

    it('returns copies: changing a result or the input does not change the store', async () => {
      const repos = uow().repositories;
      const app = anApp('myapp', 'alice', { structure: { web: 1 } });
      await repos.apps.create(app);
      app.structure.web = 5;

      const found = await repos.apps.findById('myapp');
      if (found) found.structure.web = 9;

      expect((await repos.apps.findById('myapp'))?.structure).toEqual({ web: 1 });
    });

    it('lockById returns the app inside a transaction and outside of one', async () => {
      const { repositories } = uow();
      const app = await seedApp(repositories, 'myapp', 'alice');

      const locked = await uow().transaction((repos) => repos.apps.lockById('myapp'));

      expect(locked).toEqual(app);
      expect(await repositories.apps.lockById('myapp')).toEqual(app);
    });

    it('lockById of an unknown app returns null', async () => {
      expect(await uow().transaction((repos) => repos.apps.lockById('nope'))).toBeNull();
    });

    it('listVisibleTo returns owned and shared apps ordered by id, not the others', async () => {
      const repos = uow().repositories;
      await seedApp(repos, 'zeta', 'alice');
      await seedApp(repos, 'alpha', 'bob');
      await seedApp(repos, 'mid', 'carol');
      await seedApp(repos, 'beta', 'carol');
      await seedApp(repos, 'own-2', 'alice');
      await repos.permissions.grant('beta', 'alice');
      await repos.permissions.grant('mid', 'bob');

      const visible = await repos.apps.listVisibleTo('alice', ALL);

      expect(visible.count).toBe(3);
      expect(visible.items.map((a) => a.id)).toEqual(['beta', 'own-2', 'zeta']);
    });

    it('listVisibleTo lists an app once when its owner is also granted', async () => {
      const repos = uow().repositories;
      await seedApp(repos, 'myapp', 'alice');
      await repos.permissions.grant('myapp', 'alice');

      const visible = await repos.apps.listVisibleTo('alice', ALL);

      expect(visible.count).toBe(1);
      expect(visible.items.map((a) => a.id)).toEqual(['myapp']);
    });

    it('listVisibleTo with null returns every app ordered by id', async () => {
      const repos = uow().repositories;
      for (const [id, owner] of [['c-app', 'carol'], ['a-app', 'bob'], ['b-app', 'alice']] as const) {
        await seedApp(repos, id, owner);
      }

      const all = await repos.apps.listVisibleTo(null, ALL);

      expect(all.count).toBe(3);
      expect(all.items.map((a) => a.id)).toEqual(['a-app', 'b-app', 'c-app']);
    });

    it('idsAfter gives every app id in id order, in keyset pages that start after the given id', async () => {
      const repos = uow().repositories;
      for (const [id, owner] of [['c-app', 'carol'], ['a-app', 'bob'], ['b-app', 'alice'], ['d-app', 'bob']] as const) {
        await seedApp(repos, id, owner);
      }

      expect(await repos.apps.idsAfter(null, 10)).toEqual(['a-app', 'b-app', 'c-app', 'd-app']);
      expect(await repos.apps.idsAfter(null, 2)).toEqual(['a-app', 'b-app']);
      expect(await repos.apps.idsAfter('b-app', 2)).toEqual(['c-app', 'd-app']);
      // A key that is no app's (one deleted since the page before) still starts after it.
      expect(await repos.apps.idsAfter('b-zzz', 10)).toEqual(['c-app', 'd-app']);
      expect(await repos.apps.idsAfter('d-app', 10)).toEqual([]);
    });

    it('listVisibleTo pages with the total count', async () => {
      const repos = uow().repositories;
      for (const id of ['app-4', 'app-1', 'app-3', 'app-2', 'app-5']) await seedApp(repos, id, 'alice');
      await seedApp(repos, 'other', 'bob');

      const page = await repos.apps.listVisibleTo('alice', { offset: 2, limit: 2 });
      const everyPage = await repos.apps.listVisibleTo(null, { offset: 4, limit: 10 });
      const past = await repos.apps.listVisibleTo('alice', { offset: 5, limit: 2 });

      expect(page.count).toBe(5);
      expect(page.items.map((a) => a.id)).toEqual(['app-3', 'app-4']);
      expect(everyPage.count).toBe(6);
      expect(everyPage.items.map((a) => a.id)).toEqual(['app-5', 'other']);
      expect(past).toEqual({ count: 5, items: [] });
    });

    it('listVisibleTo for a user with no apps is empty', async () => {
      const repos = uow().repositories;
      await seedApp(repos, 'myapp', 'alice');

      expect(await repos.apps.listVisibleTo('carol', ALL)).toEqual({ count: 0, items: [] });
    });

    it('listVisibleTo counts stay exact through grants, transfers, revocations and deletions', async () => {
      const repos = uow().repositories;
      const a1 = await seedApp(repos, 'a1', 'alice');
      const a2 = await seedApp(repos, 'a2', 'alice');
      await seedApp(repos, 'b1', 'bob');
      await repos.permissions.grant('b1', 'alice');
      await repos.permissions.grant('a1', 'bob');
      await repos.permissions.grant('a2', 'alice');
      const visible = async (): Promise<number[]> => [
        (await repos.apps.listVisibleTo('alice', ALL)).count,
        (await repos.apps.listVisibleTo('bob', ALL)).count,
        (await repos.apps.listVisibleTo('carol', ALL)).count,
        (await repos.apps.listVisibleTo(null, ALL)).count,
      ];
      expect(await visible()).toEqual([3, 2, 0, 3]);

      // To a collaborator: alice loses a1, bob already saw it.
      await repos.apps.update({ ...a1, owner: 'bob' });
      expect(await visible()).toEqual([2, 2, 0, 3]);

      // From an owner who also collaborates: alice keeps a2, carol gains it.
      await repos.apps.update({ ...a2, owner: 'carol' });
      expect(await visible()).toEqual([2, 2, 1, 3]);

      await repos.permissions.revoke('b1', 'alice');
      expect(await visible()).toEqual([1, 2, 1, 3]);

      await repos.permissions.grant('b1', 'carol');
      expect(await visible()).toEqual([1, 2, 2, 3]);
      await repos.apps.delete('b1');
      expect(await visible()).toEqual([1, 1, 1, 2]);
      expect((await repos.apps.listVisibleTo('alice', ALL)).items.map((a) => a.id)).toEqual(['a2']);
      expect((await repos.apps.listVisibleTo('bob', ALL)).items.map((a) => a.id)).toEqual(['a1']);
      expect((await repos.apps.listVisibleTo('carol', ALL)).items.map((a) => a.id)).toEqual(['a2']);
    });

    it('listVisibleTo counts start over for a user deleted and registered again', async () => {
      const repos = uow().repositories;
      await seedApp(repos, 'shared', 'alice');
      await repos.permissions.grant('shared', 'carol');
      expect((await repos.apps.listVisibleTo('carol', ALL)).count).toBe(1);

      await repos.users.delete('carol');
      await seedUser(repos, 'carol');

      expect(await repos.apps.listVisibleTo('carol', ALL)).toEqual({ count: 0, items: [] });
      expect((await repos.apps.listVisibleTo('alice', ALL)).count).toBe(1);
    });

    it('listVisibleTo pages past the first page of both owned and shared apps', async () => {
      const repos = uow().repositories;
      for (const id of ['a-1', 'a-3', 'a-5', 'a-7']) await seedApp(repos, id, 'alice');
      for (const id of ['a-2', 'a-4', 'a-6']) {
        await seedApp(repos, id, 'bob');
        await repos.permissions.grant(id, 'alice');
      }
      await repos.permissions.grant('a-3', 'alice');

      const pages = [];
      for (let offset = 0; offset < 8; offset += 3) pages.push(await repos.apps.listVisibleTo('alice', { offset, limit: 3 }));

      expect(pages.map((p) => p.count)).toEqual([7, 7, 7]);
      expect(pages.map((p) => p.items.map((a) => a.id))).toEqual([['a-1', 'a-2', 'a-3'], ['a-4', 'a-5', 'a-6'], ['a-7']]);
    });

    it('countOwnedBy counts owned apps, not shared ones', async () => {
      const repos = uow().repositories;
      await seedApp(repos, 'one', 'alice');
      await seedApp(repos, 'two', 'alice');
      await seedApp(repos, 'three', 'bob');
      await repos.permissions.grant('three', 'alice');

      expect(await repos.apps.countOwnedBy('alice')).toBe(2);
      expect(await repos.apps.countOwnedBy('bob')).toBe(1);
      expect(await repos.apps.countOwnedBy('carol')).toBe(0);
    });

    it('delete removes the app with its configs, builds, releases, containers, domains and permissions', async () => {
      const repos = uow().repositories;
      await seedApp(repos, 'doomed', 'alice');
      await seedApp(repos, 'kept', 'alice');
      await populate(repos, 'doomed', 'alice', 'bob');
      await populate(repos, 'kept', 'alice', 'bob');
      const doomedConfig = (await repos.releases.latest('doomed'))?.config ?? '';
      const doomedBuild = (await repos.releases.latest('doomed'))?.build ?? '';

      await repos.apps.delete('doomed');

      expect(await repos.apps.findById('doomed')).toBeNull();
      expect(await repos.configs.findByUuid(doomedConfig)).toBeNull();
      expect(await repos.builds.findByUuid(doomedBuild)).toBeNull();
      expect(await repos.builds.listForApp('doomed', ALL)).toEqual({ count: 0, items: [] });
      expect(await repos.releases.latest('doomed')).toBeNull();
      expect(await repos.releases.listForApp('doomed', ALL)).toEqual({ count: 0, items: [] });
      expect(await repos.containers.listForApp('doomed', { includeRun: true })).toEqual([]);
      expect(await repos.domains.find('doomed.example.com')).toBeNull();
      expect(await repos.permissions.listUsers('doomed')).toEqual([]);
      expect(await repos.permissions.has('doomed', 'bob')).toBe(false);

      const kept = await repos.releases.latest('kept');
      expect(await repos.apps.findById('kept')).not.toBeNull();
      expect(await repos.configs.findByUuid(kept?.config ?? '')).not.toBeNull();
      expect(await repos.builds.findByUuid(kept?.build ?? '')).not.toBeNull();
      expect((await repos.releases.listForApp('kept', ALL)).count).toBe(1);
      expect(await repos.containers.listForApp('kept', { includeRun: true })).toHaveLength(2);
      expect(await repos.domains.find('kept.example.com')).not.toBeNull();
      expect(await repos.permissions.listUsers('kept')).toEqual(['bob']);
      expect(await repos.users.findByUsername('bob')).not.toBeNull();
    });

    it('delete frees the id: a new app with it starts with nothing', async () => {
      const repos = uow().repositories;
      await seedApp(repos, 'reborn', 'alice');
      await populate(repos, 'reborn', 'alice', 'bob');

      await repos.apps.delete('reborn');
      await seedApp(repos, 'reborn', 'carol');

      expect(await repos.releases.listForApp('reborn', ALL)).toEqual({ count: 0, items: [] });
      expect(await repos.permissions.listUsers('reborn')).toEqual([]);
      expect(await repos.apps.listVisibleTo('bob', ALL)).toEqual({ count: 0, items: [] });
    });
  });
}

/** Contracts of PermissionRepository. */
export function describePermissions(uow: () => UnitOfWork): void {
  describe('PermissionRepository', () => {
    beforeEach(async () => {
      const repos = uow().repositories;
      for (const name of ['alice', 'bob', 'carol', 'dave']) await seedUser(repos, name);
      await seedApp(repos, 'myapp', 'alice');
      await seedApp(repos, 'other', 'alice');
    });

    it('grant then has and listUsers, sorted by username', async () => {
      const repos = uow().repositories;
      await repos.permissions.grant('myapp', 'dave');
      await repos.permissions.grant('myapp', 'bob');
      await repos.permissions.grant('myapp', 'carol');

      expect(await repos.permissions.listUsers('myapp')).toEqual(['bob', 'carol', 'dave']);
      expect(await repos.permissions.has('myapp', 'bob')).toBe(true);
      expect(await repos.permissions.has('myapp', 'alice')).toBe(false);
    });

    it('grant is idempotent', async () => {
      const repos = uow().repositories;
      await repos.permissions.grant('myapp', 'bob');
      await repos.permissions.grant('myapp', 'bob');

      expect(await repos.permissions.listUsers('myapp')).toEqual(['bob']);
    });

    it('grant is idempotent inside a transaction that goes on and commits', async () => {
      await uow().transaction(async (repos) => {
        await repos.permissions.grant('myapp', 'bob');
        await repos.permissions.grant('myapp', 'bob');
        await repos.permissions.grant('myapp', 'carol');
      });

      expect(await uow().repositories.permissions.listUsers('myapp')).toEqual(['bob', 'carol']);
    });

    it('permissions are per app', async () => {
      const repos = uow().repositories;
      await repos.permissions.grant('myapp', 'bob');

      expect(await repos.permissions.has('other', 'bob')).toBe(false);
      expect(await repos.permissions.listUsers('other')).toEqual([]);
    });

    it('revoke removes one grant only', async () => {
      const repos = uow().repositories;
      await repos.permissions.grant('myapp', 'bob');
      await repos.permissions.grant('myapp', 'carol');
      await repos.permissions.grant('other', 'bob');

      await repos.permissions.revoke('myapp', 'bob');

      expect(await repos.permissions.listUsers('myapp')).toEqual(['carol']);
      expect(await repos.permissions.has('other', 'bob')).toBe(true);
    });

    it('revoke of a grant that does not exist changes nothing', async () => {
      const repos = uow().repositories;
      await repos.permissions.grant('myapp', 'carol');

      await repos.permissions.revoke('myapp', 'bob');

      expect(await repos.permissions.listUsers('myapp')).toEqual(['carol']);
    });
  });
}
