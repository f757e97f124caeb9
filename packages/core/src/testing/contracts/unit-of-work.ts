/// <reference types="jest" />
import { ReleaseVersionTaken } from '../../errors';
import type { UnitOfWork } from '../../ports/repositories';
import { aConfig, anApp, aRelease, expectAlreadyExists, rejectionOf, seedApp, seedUser } from './fixtures';

/** Contracts of UnitOfWork: commit, rollback, isolation, retry and row locks. */
export function describeUnitOfWork(uow: () => UnitOfWork): void {
  describe('UnitOfWork', () => {
    it('transaction commits what the work wrote and resolves with its result', async () => {
      const result = await uow().transaction(async (repos) => {
        await seedUser(repos, 'alice');
        await seedApp(repos, 'myapp', 'alice');
        await repos.releases.create(aRelease('myapp', 'alice', 1));
        return 'done';
      });

      const repos = uow().repositories;
      expect(result).toBe('done');
      expect(await repos.users.findByUsername('alice')).not.toBeNull();
      expect(await repos.apps.findById('myapp')).not.toBeNull();
      expect((await repos.releases.latest('myapp'))?.version).toBe(1);
    });

    it('the work reads its own writes', async () => {
      const seen = await uow().transaction(async (repos) => {
        await seedUser(repos, 'alice');
        const app = await seedApp(repos, 'myapp', 'alice', { structure: { web: 1 } });
        await repos.apps.update({ ...app, structure: { web: 2 } });
        return {
          user: await repos.users.findByUsername('alice'),
          app: await repos.apps.findById('myapp'),
          visible: await repos.apps.listVisibleTo('alice', { offset: 0, limit: 10 }),
        };
      });

      expect(seen.user?.username).toBe('alice');
      expect(seen.app?.structure).toEqual({ web: 2 });
      expect(seen.visible.count).toBe(1);
    });

    it('reads outside the transaction do not see its writes until it commits', async () => {
      const outside = uow().repositories;
      const alice = await seedUser(outside, 'alice');

      const seenDuring = await uow().transaction(async (repos) => {
        await seedApp(repos, 'pending', 'alice');
        await repos.users.update({ ...alice, email: 'x@y.z' });
        return {
          app: await outside.apps.findById('pending'),
          email: (await outside.users.findByUsername('alice'))?.email,
        };
      });

      expect(seenDuring).toEqual({ app: null, email: 'alice@example.com' });
      expect(await outside.apps.findById('pending')).not.toBeNull();
      expect((await outside.users.findByUsername('alice'))?.email).toBe('x@y.z');
    });

    it('transaction rolls back everything and rethrows when the work throws', async () => {
      const outside = uow().repositories;
      await seedUser(outside, 'alice');
      await seedUser(outside, 'carol');
      const failure = new Error('boom');

      const error = await rejectionOf(
        uow().transaction(async (repos) => {
          await seedUser(repos, 'bob');
          await seedApp(repos, 'myapp', 'alice');
          await repos.configs.create(aConfig('myapp', 'alice'));
          await repos.releases.create(aRelease('myapp', 'alice', 1));
          await repos.permissions.grant('myapp', 'bob');
          await repos.users.delete('carol');
          throw failure;
        }),
      );

      expect(error).toBe(failure);
      expect(await outside.users.findByUsername('bob')).toBeNull();
      expect(await outside.users.findByUsername('carol')).not.toBeNull();
      expect(await outside.apps.findById('myapp')).toBeNull();
      expect(await outside.releases.latest('myapp')).toBeNull();
      expect(await outside.apps.listVisibleTo(null, { offset: 0, limit: 10 })).toEqual({ count: 0, items: [] });
    });

    it('a failed transaction leaves the store usable', async () => {
      await rejectionOf(
        uow().transaction(async (repos) => {
          await seedUser(repos, 'alice');
          throw new Error('boom');
        }),
      );

      await uow().transaction((repos) => seedUser(repos, 'alice'));

      expect(await uow().repositories.users.findByUsername('alice')).not.toBeNull();
    });

    it('a work that hits AlreadyExists may catch it, go on and commit', async () => {
      await seedUser(uow().repositories, 'alice');

      await uow().transaction(async (repos) => {
        await seedApp(repos, 'taken', 'alice');
        await expectAlreadyExists(repos.apps.create(anApp('taken', 'alice')), 'id');
        await seedApp(repos, 'fresh', 'alice');
      });

      const ids = (await uow().repositories.apps.listVisibleTo(null, { offset: 0, limit: 10 })).items.map((a) => a.id);
      expect(ids).toEqual(['fresh', 'taken']);
    });

    it('a work that throws ReleaseVersionTaken is retried from the start, and the retry commits', async () => {
      await seedUser(uow().repositories, 'alice');
      let attempts = 0;

      const result = await uow().transaction(async (repos) => {
        attempts += 1;
        // The first attempt's app must be gone, or this create would fail on the retry.
        await seedApp(repos, 'myapp', 'alice');
        await repos.releases.create(aRelease('myapp', 'alice', 1, { summary: `attempt ${attempts}` }));
        if (attempts === 1) throw new ReleaseVersionTaken('myapp', 1);
        return attempts;
      });

      expect(result).toBe(2);
      expect((await uow().repositories.releases.latest('myapp'))?.summary).toBe('attempt 2');
    });

    it('a release version clash raised by the repository is retried, without the first attempt\'s writes', async () => {
      const outside = uow().repositories;
      await seedUser(outside, 'alice');
      await seedApp(outside, 'myapp', 'alice');
      await outside.releases.create(aRelease('myapp', 'alice', 1));
      let attempts = 0;

      await uow().transaction(async (repos) => {
        attempts += 1;
        const next = ((await repos.releases.latest('myapp'))?.version ?? 0) + 1;
        if (attempts === 1) {
          // Stands in for a concurrent writer that takes the version first.
          await repos.releases.create(aRelease('myapp', 'alice', next, { summary: 'lost' }));
        }
        await repos.releases.create(aRelease('myapp', 'alice', next, { summary: 'mine' }));
      });

      const versions = (await outside.releases.listForApp('myapp', { offset: 0, limit: 10 })).items;
      expect(attempts).toBe(2);
      expect(versions.map((r) => [r.version, r.summary])).toEqual([
        [2, 'mine'],
        [1, 'alice created release v1'],
      ]);
    });

    it('a work that keeps throwing ReleaseVersionTaken fails after a bounded number of attempts', async () => {
      let attempts = 0;

      const error = await rejectionOf(
        uow().transaction(async () => {
          attempts += 1;
          throw new ReleaseVersionTaken('myapp', 2);
        }),
      );

      expect(error).toBeInstanceOf(ReleaseVersionTaken);
      expect(attempts).toBeGreaterThan(1);
      expect(attempts).toBeLessThanOrEqual(20);
    });

    it('a work that throws anything else is not retried', async () => {
      let attempts = 0;

      await rejectionOf(
        uow().transaction(async () => {
          attempts += 1;
          throw new Error('not retryable');
        }),
      );

      expect(attempts).toBe(1);
    });

    it('concurrent works that lock the app produce consecutive release versions', async () => {
      const outside = uow().repositories;
      await seedUser(outside, 'alice');
      await seedApp(outside, 'myapp', 'alice');
      const writers = 20;

      await Promise.all(
        Array.from({ length: writers }, () =>
          uow().transaction(async (repos) => {
            const app = await repos.apps.lockById('myapp');
            if (!app) throw new Error('the app vanished');
            const latest = await repos.releases.latest('myapp');
            const version = (latest?.version ?? 0) + 1;
            await repos.releases.create(aRelease('myapp', 'alice', version));
            await repos.apps.update({ ...app, structure: { web: version } });
          }),
        ),
      );

      const releases = await outside.releases.listForApp('myapp', { offset: 0, limit: 100 });
      expect(releases.count).toBe(writers);
      expect(releases.items.map((r) => r.version)).toEqual(Array.from({ length: writers }, (_, i) => writers - i));
      expect((await outside.apps.findById('myapp'))?.structure).toEqual({ web: writers });
    });

    it('concurrent works that lock the owner count its apps exactly: 30 creations against a limit of 7 make 7 apps', async () => {
      const outside = uow().repositories;
      await seedUser(outside, 'alice');
      const limit = 7;

      const outcomes = await Promise.allSettled(
        Array.from({ length: 30 }, (_, i) =>
          uow().transaction(async (repos) => {
            if (!(await repos.users.lockByUsername('alice'))) throw new Error('the user vanished');
            if ((await repos.apps.countOwnedBy('alice')) >= limit) throw new Error('over the limit');
            await seedApp(repos, `app-${i}`, 'alice');
          }),
        ),
      );

      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(limit);
      expect(await outside.apps.countOwnedBy('alice')).toBe(limit);
    });

    it('lockByUsername returns the user inside a transaction and outside of one, null for an unknown user', async () => {
      await seedUser(uow().repositories, 'alice');
      expect((await uow().transaction((repos) => repos.users.lockByUsername('alice')))?.username).toBe('alice');
      expect((await uow().repositories.users.lockByUsername('alice'))?.username).toBe('alice');
      expect(await uow().transaction((repos) => repos.users.lockByUsername('nobody'))).toBeNull();
    });
  });
}
