import {
  APP_ID_PATTERN,
  DEFAULT_SETTINGS,
  ValidationFailed,
  appHostname,
  assertValidAppId,
  canAdministerApp,
  canSeeApp,
  generateAppName,
  isAdmin,
} from '@svc/core';
import { SeededRandom, aUser, anApp } from '@svc/core/testing';
import { thrownBy } from './support/world';

const RESERVED = DEFAULT_SETTINGS.reservedAppNames;
const FORMAT = 'App IDs can only contain [a-z0-9-], must start and end with a letter or digit, and be at most 63 characters.';

function idErrors(id: unknown, reserved: readonly string[] = RESERVED): string[] {
  const error = thrownBy(() => assertValidAppId(id, reserved));
  expect(error).toBeInstanceOf(ValidationFailed);
  return error.fields?.id ?? [];
}

describe('assertValidAppId', () => {
  it.each([['myapp'], ['my-app'], ['a'], ['0'], ['app-2-go'], ['x'.repeat(63)]])('accepts %p', (id) => {
    expect(() => assertValidAppId(id, RESERVED)).not.toThrow();
  });

  it.each([
    ['MyApp'],
    ['my_app'],
    ['-myapp'],
    ['myapp-'],
    ['my--app'],
    ['my.app'],
    ['my app'],
    ['x'.repeat(64)],
  ])('refuses %p with the DNS-label message', (id) => {
    expect(idErrors(id)).toEqual([FORMAT]);
  });

  it('refuses a blank id and a non-string id', () => {
    expect(idErrors('')).toEqual(['This field may not be blank.']);
    expect(idErrors(42)).toEqual(['Not a valid string.']);
  });

  it.each([['svc'], ['controller'], ['api'], ['www'], ['router'], ['dashboard'], ['admin'], ['git'], ['mail'], ['autodiscover'], ['autoconfig']])('refuses the default reserved name %p', (id) => {
    expect(idErrors(id)).toEqual([`${id} is a reserved name.`]);
  });

  it('uses the reserved list it is given, not the default one', () => {
    expect(() => assertValidAppId('api', ['billing'])).not.toThrow();
    expect(idErrors('billing', ['billing'])).toEqual(['billing is a reserved name.']);
  });
});

describe('generateAppName', () => {
  it('makes a pronounceable <adjective>-<noun> DNS label on the first attempts', () => {
    const random = new SeededRandom(7);
    for (let i = 0; i < 50; i++) {
      const name = generateAppName(random, 0);
      expect(name).toMatch(/^[a-z]+-[a-z]+$/);
      expect(name).toMatch(APP_ID_PATTERN);
    }
  });

  it('is deterministic for a given random sequence', () => {
    expect(generateAppName(new SeededRandom(3), 0)).toBe(generateAppName(new SeededRandom(3), 0));
  });

  it('picks the adjective and noun the random source chooses', () => {
    const random = new SeededRandom();
    random.force(14, 24);
    expect(generateAppName(random, 0)).toBe('dusty-lantern');
  });

  it('appends a number from the third attempt on, to widen the space', () => {
    const random = new SeededRandom();
    random.force(14, 24, 14, 24, 17);
    expect(generateAppName(random, 2)).toBe('dusty-lantern');
    expect(generateAppName(random, 3)).toBe('dusty-lantern-17');
  });
});

describe('app visibility rules', () => {
  const app = anApp({ owner: 'alice' });
  const alice = aUser({ username: 'alice' });
  const bob = aUser({ username: 'bob', id: 2 });
  const root = aUser({ username: 'root', id: 3, isSuperuser: true, isStaff: true });

  it('the owner and administrators may administer the app; others may not', () => {
    expect(canAdministerApp(app, alice)).toBe(true);
    expect(canAdministerApp(app, root)).toBe(true);
    expect(canAdministerApp(app, bob)).toBe(false);
  });

  it('a collaborator may see the app; a stranger may not', () => {
    expect(canSeeApp(app, bob, true)).toBe(true);
    expect(canSeeApp(app, bob, false)).toBe(false);
    expect(canSeeApp(app, alice, false)).toBe(true);
    expect(canSeeApp(app, root, false)).toBe(true);
  });

  it('only a superuser is an administrator (staff alone is not)', () => {
    expect(isAdmin(root)).toBe(true);
    expect(isAdmin(aUser({ isStaff: true, isSuperuser: false }))).toBe(false);
  });

  it('the app hostname is <id>.<platform domain>', () => {
    expect(appHostname('myapp', 'localhost')).toBe('myapp.localhost');
    expect(appHostname('myapp', 'apps.example.net')).toBe('myapp.apps.example.net');
  });
});
