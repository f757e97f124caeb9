/// <reference types="jest" />
import type { BuildSlot, BuildSlotStore } from '../../ports/build-slots';

/** Opens an empty build slot store before each test; `close` (when given) after it. */
export type OpenBuildSlotStore = () => Promise<{ store: BuildSlotStore; close?: () => Promise<void> }>;

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const at = (seconds: number): Date => new Date(T0 + seconds * 1000);
const slot = (build: string, username: string, expiresAt = 60, startedAt = 0): BuildSlot => ({
  build,
  username,
  started: at(startedAt),
  expires: at(expiresAt),
});

/**
 * The shared contract of every BuildSlotStore: a user's live slots are counted exactly,
 * concurrent takers included, and expired ones are taken over.
 */
export function describeBuildSlotStoreContract(label: string, open: OpenBuildSlotStore): void {
  describe(`${label}: build slot store contract`, () => {
    let store: BuildSlotStore;
    let close: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ store, close } = await open());
    });

    afterEach(async () => {
      await close?.();
    });

    it('takes slots up to the limit per user, counting users apart, and gives a released one back', async () => {
      expect(await store.acquire(slot('b1', 'alice'), 2, at(1))).toEqual({ taken: true, held: 0 });
      expect(await store.acquire(slot('b2', 'alice'), 2, at(1))).toEqual({ taken: true, held: 1 });
      expect(await store.acquire(slot('b3', 'alice'), 2, at(1))).toEqual({ taken: false, held: 2 });
      expect(await store.acquire(slot('b4', 'bob'), 2, at(1))).toEqual({ taken: true, held: 0 });
      await store.release('b1');
      await store.release('b1');
      await store.release('never-taken');
      expect(await store.acquire(slot('b5', 'alice'), 2, at(2))).toEqual({ taken: true, held: 1 });
    });

    it('takes over slots that expired, and keeps renewed ones', async () => {
      await store.acquire(slot('old', 'alice', 30), 1, at(1));
      await store.acquire(slot('kept', 'bob', 30), 1, at(1));
      await store.renew('kept', at(90));
      await store.renew('gone', at(90));
      expect(await store.acquire(slot('new', 'alice', 100, 40), 1, at(40))).toEqual({ taken: true, held: 0 });
      expect(await store.acquire(slot('other', 'bob', 100, 40), 1, at(40))).toEqual({ taken: false, held: 1 });
      expect(await store.acquire(slot('other', 'bob', 150, 91), 1, at(91))).toEqual({ taken: true, held: 0 });
    });

    it('of builds asked for together, takes exactly the limit', async () => {
      const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => store.acquire(slot(`together-${i}`, 'carol'), 3, at(1))));
      expect(claims.filter((claim) => claim.taken)).toHaveLength(3);
    });
  });
}
