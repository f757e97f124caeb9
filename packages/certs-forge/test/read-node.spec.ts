import { parseOpenSslTime, parseSubjectAltName } from '../src/read-node';

describe('parseOpenSslTime', () => {
  it.each([
    ['Nov 21 08:34:46 2026 GMT', '2026-11-21T08:34:46.000Z'],
    ['Feb  1 00:00:00 2126 GMT', '2126-02-01T00:00:00.000Z'],
    ['Dec 31 23:59:59.25 1999 GMT', '1999-12-31T23:59:59.250Z'],
  ])('parses %p', (text, iso) => {
    expect(parseOpenSslTime(text).toISOString()).toBe(iso);
  });

  it.each(['2026-11-21T08:34:46Z', 'Foo 21 08:34:46 2026 GMT', 'Nov 21 08:34:46 2026'])('throws on %p', (text) => {
    expect(() => parseOpenSslTime(text)).toThrow(/Unrecognised certificate time/);
  });
});

describe('parseSubjectAltName', () => {
  it('returns the DNS names in order and skips other kinds', () => {
    expect(parseSubjectAltName('DNS:a.example.com, IP Address:192.0.2.1, email:x@example.com, DNS:*.example.org'))
      .toEqual(['a.example.com', '*.example.org']);
  });

  it('reads a quoted value as one name, so a comma inside cannot add an entry', () => {
    expect(parseSubjectAltName('DNS:a.example.com, DNS:"weird\\u002c DNS:evil.example.com", URI:"http://x/?a=b\\u002cc"'))
      .toEqual(['a.example.com', 'weird, DNS:evil.example.com']);
  });

  it.each([undefined, ''])('returns no names for %p', (text) => {
    expect(parseSubjectAltName(text)).toEqual([]);
  });
});
