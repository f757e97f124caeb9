import type { Actor } from '@svc/core';
import { World } from './world';

/** A first page large enough to hold everything a test puts in a listing. */
export const PAGE = { page: 1, pageSize: 100 };

/** A world with the user alice and her app myapp, not yet deployed. */
export async function aliceWithApp(settings = {}): Promise<{ world: World; alice: Actor }> {
  const world = new World(settings);
  const alice = await world.actor('alice');
  await world.app(alice);
  return { world, alice };
}
