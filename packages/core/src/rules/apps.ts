import { ValidationFailed } from '../errors';
import type { App, User } from '../model/entities';
import type { RandomSource } from '../ports/services';

export const APP_ID_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/;
export const APP_ID_MAX = 63;

/**
 * Checks an application id: a DNS label that is not reserved.
 * @throws ValidationFailed on field `id`.
 */
export function assertValidAppId(id: unknown, reserved: readonly string[]): asserts id is string {
  if (typeof id !== 'string' || id.length === 0) {
    throw ValidationFailed.field('id', typeof id === 'string' ? 'This field may not be blank.' : 'Not a valid string.');
  }
  if (id.length > APP_ID_MAX || !APP_ID_PATTERN.test(id)) {
    throw ValidationFailed.field(
      'id',
      'App IDs can only contain [a-z0-9-], must start and end with a letter or digit, and be at most 63 characters.',
    );
  }
  if (reserved.includes(id)) throw ValidationFailed.field('id', `${id} is a reserved name.`);
}

const ADJECTIVES = [
  'amber', 'ancient', 'autumn', 'bold', 'brave', 'breezy', 'bright', 'calm', 'clever', 'cosmic',
  'crimson', 'crisp', 'dapper', 'daring', 'dusty', 'eager', 'early', 'electric', 'fancy', 'fearless',
  'gentle', 'gilded', 'golden', 'hidden', 'hollow', 'humble', 'icy', 'jolly', 'keen', 'lively',
  'lucky', 'mellow', 'misty', 'modest', 'nimble', 'noble', 'olive', 'patient', 'polished', 'proud',
  'quiet', 'rapid', 'rustic', 'scarlet', 'shiny', 'silent', 'silver', 'snowy', 'solar', 'steady',
  'stormy', 'sturdy', 'sunny', 'swift', 'tidy', 'velvet', 'vivid', 'wandering', 'windy', 'witty',
];
const NOUNS = [
  'anchor', 'badger', 'beacon', 'boulder', 'breeze', 'canyon', 'cedar', 'comet', 'coral', 'crane',
  'delta', 'ember', 'falcon', 'fern', 'fjord', 'forest', 'garden', 'glacier', 'harbor', 'hazel',
  'heron', 'island', 'kettle', 'lagoon', 'lantern', 'maple', 'meadow', 'meteor', 'monsoon', 'nebula',
  'oasis', 'orchard', 'otter', 'pebble', 'pine', 'prairie', 'quartz', 'raven', 'reef', 'ridge',
  'river', 'robin', 'sailor', 'sequoia', 'shadow', 'sparrow', 'summit', 'thicket', 'timber', 'tundra',
  'valley', 'walrus', 'willow', 'zephyr',
];

/** A pronounceable `<adjective>-<noun>` name; after `attempt` 3, a number is appended to widen the space. */
export function generateAppName(random: RandomSource, attempt: number): string {
  const adjective = ADJECTIVES[random.int(ADJECTIVES.length)] as string;
  const noun = NOUNS[random.int(NOUNS.length)] as string;
  return attempt < 3 ? `${adjective}-${noun}` : `${adjective}-${noun}-${random.int(10000)}`;
}

/** Administrators can do anything. */
export function isAdmin(user: User): boolean {
  return user.isSuperuser;
}

/** Owner and administrators may delete, transfer and manage collaborators of an app. */
export function canAdministerApp(app: App, user: User): boolean {
  return app.owner === user.username || isAdmin(user);
}

/** Owner, collaborators and administrators may see and change an app. */
export function canSeeApp(app: App, user: User, isCollaborator: boolean): boolean {
  return canAdministerApp(app, user) || isCollaborator;
}

/** The URL hostname of an app. */
export function appHostname(appId: string, platformDomain: string): string {
  return `${appId}.${platformDomain}`;
}
