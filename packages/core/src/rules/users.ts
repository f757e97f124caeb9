import { FieldErrorCollector, optionalString, requiredString } from './fields';

export const USERNAME_PATTERN = /^[\w.@+-]+$/;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;

/** The validated fields of a registration. */
export interface Registration {
  username: string;
  password: string;
  email: string;
  firstName: string;
  lastName: string;
}

/**
 * Validates a registration body; `is_superuser` and `is_staff` are ignored.
 * @throws ValidationFailed with every failing field.
 */
export function parseRegistration(body: Record<string, unknown>): Registration {
  const errors = new FieldErrorCollector();
  const username = requiredString(errors, body, 'username', 64);
  if (username !== undefined && !USERNAME_PATTERN.test(username)) {
    errors.add('username', 'Enter a valid username. This value may contain only letters, numbers, and @/./+/-/_ characters.');
  }
  const password = requiredString(errors, body, 'password', 128);
  const email = requiredString(errors, body, 'email', 254);
  if (email !== undefined && !EMAIL_PATTERN.test(email)) errors.add('email', 'Enter a valid email address.');
  const firstName = optionalString(errors, body, 'first_name', 64) ?? '';
  const lastName = optionalString(errors, body, 'last_name', 64) ?? '';
  errors.throwIfAny();
  return { username: username!, password: password!, email: email!, firstName, lastName };
}

/** Validates a new password. */
export function checkNewPassword(errors: FieldErrorCollector, body: Record<string, unknown>): string | undefined {
  return requiredString(errors, body, 'new_password', 128);
}
