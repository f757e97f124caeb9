import { ValidationFailed, normalizeDomain } from '@svc/core';
import { thrownBy } from './support/world';

const PLATFORM = 'localhost';

function messageFor(raw: unknown, platform = PLATFORM): string {
  const error = thrownBy(() => normalizeDomain(raw, platform));
  expect(error).toBeInstanceOf(ValidationFailed);
  expect(Object.keys(error.fields ?? {})).toEqual(['domain']);
  return (error.fields?.domain ?? [])[0] ?? '';
}

describe('normalizeDomain', () => {
  it.each([
    ['example.com', 'example.com'],
    ['www.example.com', 'www.example.com'],
    ['WWW.Example.COM', 'www.example.com'],
    ['www.example.com.', 'www.example.com'],
    ['  shop.example.org ', 'shop.example.org'],
    ['my-shop.example.co.uk', 'my-shop.example.co.uk'],
    ['1.example.com', '1.example.com'],
    ['a.b2', 'a.b2'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
  ])('accepts %p as %p (lower case, one trailing dot dropped)', (raw, stored) => {
    expect(normalizeDomain(raw, PLATFORM)).toBe(stored);
  });

  it('accepts labels of 63 characters and names of 253 characters', () => {
    const label63 = 'a'.repeat(63);
    expect(normalizeDomain(`${label63}.com`, PLATFORM)).toBe(`${label63}.com`);
    const name253 = [label63, label63, label63, 'b'.repeat(57), 'com'].join('.');
    expect(name253).toHaveLength(253);
    expect(normalizeDomain(name253, PLATFORM)).toBe(name253);
  });

  it('refuses a name longer than 253 characters', () => {
    const label63 = 'a'.repeat(63);
    const name254 = [label63, label63, label63, 'b'.repeat(58), 'com'].join('.');
    expect(name254).toHaveLength(254);
    expect(messageFor(name254)).toBe(`Hostname does not look valid: ${name254}`);
  });

  it('refuses a label longer than 63 characters', () => {
    const raw = `${'a'.repeat(64)}.com`;
    expect(messageFor(raw)).toBe(`Hostname does not look valid: ${raw}`);
  });

  it.each([
    ['example', 'a single label'],
    ['-example.com', 'a label starting with a dash'],
    ['example-.com', 'a label ending with a dash'],
    ['exa_mple.com', 'an underscore'],
    ['exa mple.com', 'a space'],
    ['example..com', 'an empty label'],
    ['.example.com', 'a leading dot'],
    ['example.com..', 'two trailing dots'],
    ['example.123', 'an all-digit last label'],
    ['192.168.1.1', 'an IP address'],
    ['bücher.example', 'a non-ASCII letter'],
    ['example.com/path', 'a slash'],
  ])('refuses %p (%s)', (raw) => {
    expect(messageFor(raw)).toBe(`Hostname does not look valid: ${raw}`);
  });

  it.each([['*.example.com'], ['www.*.example.com']])('refuses the wildcard %p', (raw) => {
    expect(messageFor(raw)).toBe('Wildcard domains are not supported.');
  });

  it.each([
    ['myapp.localhost', 'Domains under localhost are reserved for the platform.'],
    ['a.b.LOCALHOST', 'Domains under localhost are reserved for the platform.'],
    ['localhost.', 'Hostname does not look valid: localhost.'],
  ])('refuses %p under the default platform domain with %p', (raw, message) => {
    expect(messageFor(raw)).toBe(message);
  });

  it('refuses the platform domain itself and names under it, whatever the case', () => {
    expect(messageFor('apps.example.net', 'apps.example.net')).toBe('Domains under apps.example.net are reserved for the platform.');
    expect(messageFor('MyApp.Apps.Example.net', 'apps.example.net')).toBe('Domains under apps.example.net are reserved for the platform.');
    expect(messageFor('myapp.localhost')).toBe('Domains under localhost are reserved for the platform.');
  });

  it('accepts a name that merely ends with the same letters as the platform domain', () => {
    expect(normalizeDomain('notapps.example.net', 'apps.example.net')).toBe('notapps.example.net');
  });

  it.each([
    [undefined, 'This field is required.'],
    [null, 'This field is required.'],
    ['', 'Not a valid string.'],
    ['   ', 'Not a valid string.'],
    [42, 'Not a valid string.'],
  ])('refuses %p with %p', (raw, message) => {
    expect(messageFor(raw)).toBe(message);
  });
});
