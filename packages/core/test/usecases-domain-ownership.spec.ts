import { Forbidden, parentDomains, type Actor } from '@svc/core';
import { World, rejectionOf } from './support/world';

describe('parentDomains', () => {
  it('lists the domains a name is under, nearest first, down to two labels', () => {
    expect(parentDomains('a.shop.example.co.uk')).toEqual(['shop.example.co.uk', 'example.co.uk', 'co.uk']);
    expect(parentDomains('shop.example.com')).toEqual(['example.com']);
    expect(parentDomains('example.com')).toEqual([]);
  });
});

describe('AddDomain: a name under a domain another owner holds', () => {
  async function victimAndSquatter(): Promise<{ world: World; victim: Actor; squatter: Actor }> {
    const world = new World();
    const victim = await world.actor('victim');
    const squatter = await world.actor('mallory');
    await world.app(victim, 'victim-site');
    await world.app(squatter, 'mallory-site');
    await world.useCases.addDomain.execute(victim, 'victim-site', { domain: 'victim-corp.test' });
    return { world, victim, squatter };
  }

  it('is refused to another tenant, at any depth, with Forbidden DOMAIN.NOT_CONTROLLED, and nothing is written', async () => {
    const { world, squatter } = await victimAndSquatter();

    for (const domain of ['shop.victim-corp.test', 'a.b.victim-corp.test', 'SHOP.Victim-Corp.Test.']) {
      const error = await rejectionOf(world.useCases.addDomain.execute(squatter, 'mallory-site', { domain }));
      expect(error).toBeInstanceOf(Forbidden);
      expect(error.code).toBe('DOMAIN.NOT_CONTROLLED');
      expect(error.message).toContain('is under victim-corp.test');
    }
    expect(world.uow.snapshot().domains.map((d) => d.domain)).toEqual(['victim-corp.test']);
  });

  it('is let through for the holder\'s own apps, a sibling name and an unrelated domain', async () => {
    const { world, victim, squatter } = await victimAndSquatter();
    await world.app(victim, 'victim-shop');

    await world.useCases.addDomain.execute(victim, 'victim-site', { domain: 'www.victim-corp.test' });
    await world.useCases.addDomain.execute(victim, 'victim-shop', { domain: 'shop.victim-corp.test' });
    await world.useCases.addDomain.execute(squatter, 'mallory-site', { domain: 'victim-corp-shop.test' });

    expect(world.uow.snapshot().domains.map((d) => d.domain).sort()).toEqual(['shop.victim-corp.test', 'victim-corp-shop.test', 'victim-corp.test', 'www.victim-corp.test']);
  });

  it('is shared by the holder adding it to the other tenant\'s app once granted access; a collaborator of the holder\'s app and an administrator may too', async () => {
    const { world, victim, squatter } = await victimAndSquatter();
    const admin = await world.actor('root', { admin: true });
    const carol = await world.actor('carol');
    await world.app(carol, 'carol-site');
    await world.useCases.grantPermission.execute(squatter, 'mallory-site', { username: 'victim' });
    await world.useCases.grantPermission.execute(victim, 'victim-site', { username: 'carol' });

    await world.useCases.addDomain.execute(victim, 'mallory-site', { domain: 'partner.victim-corp.test' });
    await world.useCases.addDomain.execute(carol, 'carol-site', { domain: 'carol.victim-corp.test' });
    await world.useCases.addDomain.execute(admin, 'mallory-site', { domain: 'support.victim-corp.test' });
    // Access to the tenant's app alone gives the tenant nothing under the victim's domain.
    const error = await rejectionOf(world.useCases.addDomain.execute(squatter, 'mallory-site', { domain: 'more.victim-corp.test' }));

    expect(error.code).toBe('DOMAIN.NOT_CONTROLLED');
    expect(world.uow.snapshot().domains.filter((d) => d.app !== 'victim-site').map((d) => d.domain).sort()).toEqual([
      'carol.victim-corp.test',
      'partner.victim-corp.test',
      'support.victim-corp.test',
    ]);
  });

  it('holds after the holder\'s app changes owner: the new owner holds the domain', async () => {
    const { world, victim, squatter } = await victimAndSquatter();
    await world.useCases.updateApp.execute(victim, 'victim-site', { owner: 'mallory' });

    await expect(world.useCases.addDomain.execute(squatter, 'mallory-site', { domain: 'shop.victim-corp.test' })).resolves.toMatchObject({ app: 'mallory-site' });
  });
});
