/// <reference types="jest" />
import type { DeployLease } from '../../model/entities';
import type { UnitOfWork } from '../../ports/repositories';
import { at, nextUuid, seedApp, seedUser } from './fixtures';

function aLease(app: string, overrides: Partial<DeployLease> = {}): DeployLease {
  return {
    app,
    holder: nextUuid(),
    version: 7,
    containers: [nextUuid(), nextUuid()],
    started: at(10, 1),
    heartbeat: at(11, 2),
    expires: at(41, 3),
    ...overrides,
  };
}

/** Contracts of DeployLeaseRepository. */
export function describeDeployLeases(uow: () => UnitOfWork): void {
  describe('DeployLeaseRepository', () => {
    beforeEach(async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'alice');
      await seedApp(repos, 'myapp', 'alice');
      await seedApp(repos, 'other', 'alice');
    });

    it('insert then find returns every field, a null version and no containers included', async () => {
      const repos = uow().repositories;
      const lease = aLease('myapp');
      const bare = aLease('other', { version: null, containers: [] });

      expect(await repos.deploys.insert(lease)).toBe(true);
      expect(await repos.deploys.insert(bare)).toBe(true);

      const found = await repos.deploys.find('myapp');
      expect(found).toEqual(lease);
      expect(found?.expires).toBeInstanceOf(Date);
      expect(await repos.deploys.find('other')).toEqual(bare);
      expect(await repos.deploys.find('absent')).toBeNull();
    });

    it('insert refuses a second lease on the same app and keeps the first', async () => {
      const repos = uow().repositories;
      const first = aLease('myapp');

      await repos.deploys.insert(first);
      const second = await repos.deploys.insert(aLease('myapp', { version: 9 }));

      expect(second).toBe(false);
      expect(await repos.deploys.find('myapp')).toEqual(first);
    });

    it('replace writes only while the given holder holds the lease', async () => {
      const repos = uow().repositories;
      const lease = aLease('myapp');
      await repos.deploys.insert(lease);
      const renewed = { ...lease, version: 8, containers: ['c-1'], heartbeat: at(20), expires: at(50) };
      const takenOver = { ...renewed, holder: nextUuid(), containers: [] };

      expect(await repos.deploys.replace(nextUuid(), { ...renewed, version: 99 })).toBe(false);
      expect(await repos.deploys.replace(lease.holder, renewed)).toBe(true);
      expect(await repos.deploys.find('myapp')).toEqual(renewed);
      expect(await repos.deploys.replace(lease.holder, takenOver)).toBe(true);
      expect(await repos.deploys.replace(lease.holder, renewed)).toBe(false);
      expect(await repos.deploys.find('myapp')).toEqual(takenOver);
    });

    it('replace of an app without a lease writes nothing', async () => {
      const repos = uow().repositories;

      expect(await repos.deploys.replace('someone', aLease('myapp'))).toBe(false);
      expect(await repos.deploys.find('myapp')).toBeNull();
    });

    it('remove deletes only the given holder\'s lease, and then the app can be leased again', async () => {
      const repos = uow().repositories;
      const lease = aLease('myapp');
      await repos.deploys.insert(lease);

      expect(await repos.deploys.remove('myapp', nextUuid())).toBe(false);
      expect(await repos.deploys.find('myapp')).toEqual(lease);
      expect(await repos.deploys.remove('myapp', lease.holder)).toBe(true);
      expect(await repos.deploys.remove('myapp', lease.holder)).toBe(false);
      expect(await repos.deploys.find('myapp')).toBeNull();
      expect(await repos.deploys.insert(aLease('myapp'))).toBe(true);
    });

    it('list returns every lease, oldest first', async () => {
      const repos = uow().repositories;
      const late = aLease('myapp', { started: at(30) });
      const early = aLease('other', { started: at(5) });
      await repos.deploys.insert(late);
      await repos.deploys.insert(early);

      expect(await repos.deploys.list()).toEqual([early, late]);
    });

    it('inside a transaction, a removal rolls back with it and a committed one is seen by all', async () => {
      const lease = aLease('myapp');
      await uow().repositories.deploys.insert(lease);

      await expect(
        uow().transaction(async (repos) => {
          expect(await repos.deploys.remove('myapp', lease.holder)).toBe(true);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await uow().repositories.deploys.find('myapp')).toEqual(lease);

      await uow().transaction(async (repos) => {
        expect(await repos.deploys.remove('myapp', lease.holder)).toBe(true);
      });
      expect(await uow().repositories.deploys.find('myapp')).toBeNull();
    });

    it('of two concurrent inserts on one app exactly one wins', async () => {
      const repos = uow().repositories;
      const results = await Promise.all([repos.deploys.insert(aLease('myapp')), repos.deploys.insert(aLease('myapp'))]);

      expect(results.filter((won) => won)).toHaveLength(1);
    });
  });
}
