import { ValidationFailed, parseRegistration } from '@svc/core';
import { thrownBy } from './support/world';

const VALID = { username: 'alice', password: 's3cret', email: 'alice@example.com' };

function errorsOf(body: Record<string, unknown>): Record<string, string[]> {
  const error = thrownBy(() => parseRegistration(body));
  expect(error).toBeInstanceOf(ValidationFailed);
  return error.fields ?? {};
}

describe('parseRegistration', () => {
  it('reads the required fields and defaults the names to empty strings', () => {
    expect(parseRegistration(VALID)).toEqual({ ...VALID, firstName: '', lastName: '' });
  });

  it('reads first_name and last_name', () => {
    expect(parseRegistration({ ...VALID, first_name: 'Alice', last_name: 'Liddell' })).toMatchObject({
      firstName: 'Alice',
      lastName: 'Liddell',
    });
  });

  it('ignores is_superuser and is_staff', () => {
    const parsed = parseRegistration({ ...VALID, is_superuser: true, is_staff: true });
    expect(parsed).toEqual({ ...VALID, firstName: '', lastName: '' });
  });

  it.each([['a'], ['alice.smith'], ['alice@example.com'], ['a+b'], ['a-b'], ['a_b'], ['A1'], ['x'.repeat(64)]])(
    'accepts the username %p',
    (username) => {
      expect(parseRegistration({ ...VALID, username }).username).toBe(username);
    },
  );

  it.each([['alice smith'], ['alice!'], ['al/ice'], ['al:ice']])('refuses the username %p', (username) => {
    expect(errorsOf({ ...VALID, username })).toEqual({
      username: ['Enter a valid username. This value may contain only letters, numbers, and @/./+/-/_ characters.'],
    });
  });

  it('refuses a username of 65 characters and a password of 129', () => {
    expect(errorsOf({ ...VALID, username: 'x'.repeat(65), password: 'p'.repeat(129) })).toEqual({
      username: ['Ensure this field has no more than 64 characters.'],
      password: ['Ensure this field has no more than 128 characters.'],
    });
  });

  it('accepts a password of 128 characters', () => {
    expect(parseRegistration({ ...VALID, password: 'p'.repeat(128) }).password).toHaveLength(128);
  });

  it.each([['alice'], ['alice@'], ['@example.com'], ['alice@example'], ['ali ce@example.com'], ['alice@example..com']])(
    'refuses the email %p',
    (email) => {
      expect(errorsOf({ ...VALID, email })).toEqual({ email: ['Enter a valid email address.'] });
    },
  );

  it('reports every missing field at once', () => {
    expect(errorsOf({})).toEqual({
      username: ['This field is required.'],
      password: ['This field is required.'],
      email: ['This field is required.'],
    });
  });

  it('refuses blank and non-string fields', () => {
    expect(errorsOf({ username: '', password: 5, email: 'alice@example.com', first_name: 7 })).toEqual({
      username: ['This field may not be blank.'],
      password: ['Not a valid string.'],
      first_name: ['Not a valid string.'],
    });
  });

  it('refuses names longer than 64 characters', () => {
    expect(errorsOf({ ...VALID, first_name: 'f'.repeat(65), last_name: 'l'.repeat(65) })).toEqual({
      first_name: ['Ensure this field has no more than 64 characters.'],
      last_name: ['Ensure this field has no more than 64 characters.'],
    });
  });
});
