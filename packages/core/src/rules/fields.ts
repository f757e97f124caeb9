import { ValidationFailed, type FieldErrors } from '../errors';

/** Collects per-field messages and throws them all at once. */
export class FieldErrorCollector {
  // No prototype: a field named by the client (a process type, say `__proto__`) is just a key.
  private readonly errors: FieldErrors = Object.create(null) as FieldErrors;

  add(field: string, message: string): void {
    (this.errors[field] ??= []).push(message);
  }

  get empty(): boolean {
    return Object.keys(this.errors).length === 0;
  }

  /** @throws ValidationFailed when any message was added. */
  throwIfAny(): void {
    if (!this.empty) throw new ValidationFailed({ ...this.errors });
  }
}

export const REQUIRED = 'This field is required.';
export const NOT_A_STRING = 'Not a valid string.';

/** True for a plain JSON object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads a required string field, adding a message when it is missing, not a string, blank,
 * or outside the length bounds.
 */
export function requiredString(
  errors: FieldErrorCollector,
  body: Record<string, unknown>,
  field: string,
  maxLength: number,
): string | undefined {
  const value = body[field];
  if (value === undefined || value === null || value === '') {
    errors.add(field, value === '' ? 'This field may not be blank.' : REQUIRED);
    return undefined;
  }
  if (typeof value !== 'string') {
    errors.add(field, NOT_A_STRING);
    return undefined;
  }
  if (value.length > maxLength) {
    errors.add(field, `Ensure this field has no more than ${maxLength} characters.`);
    return undefined;
  }
  return value;
}

/** Reads an optional string field (absent or null gives undefined). */
export function optionalString(
  errors: FieldErrorCollector,
  body: Record<string, unknown>,
  field: string,
  maxLength: number,
): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    errors.add(field, NOT_A_STRING);
    return undefined;
  }
  if (value.length > maxLength) {
    errors.add(field, `Ensure this field has no more than ${maxLength} characters.`);
    return undefined;
  }
  return value;
}

/**
 * Reads an integer given as a number or a numeric string.
 * @returns the integer, or null when the value is not one.
 */
export function toInteger(value: unknown): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : null;
  if (typeof value === 'string' && /^\s*-?[0-9]{1,15}\s*$/.test(value)) return Number(value.trim());
  return null;
}

/** The request body as an object; anything else (array, scalar, null) counts as empty. */
export function bodyObject(body: unknown): Record<string, unknown> {
  return isPlainObject(body) ? body : {};
}
