import { appEtag, fingerprint } from '@svc/core';

/** FNV-1a, 64 bits, written the plain way with BigInt: what `fingerprint` must give. */
function reference(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, '0');
}

describe('fingerprint', () => {
  it('is FNV-1a 64 of the UTF-16 code units: the published vectors', () => {
    expect(fingerprint('')).toBe('cbf29ce484222325');
    expect(fingerprint('a')).toBe('af63dc4c8601ec8c');
    expect(fingerprint('foobar')).toBe('85944171f73967e8');
  });

  it('gives what 64-bit BigInt arithmetic gives, for any text: long, non-ASCII, surrogate pairs', () => {
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const texts = ['héllo ✓ 🚀', '\uffff\u0000\ud800', 'x'.repeat(10_000)];
    for (let t = 0; t < 200; t++) {
      texts.push(String.fromCharCode(...Array.from({ length: random(80) }, () => random(0x10000))));
    }

    for (const text of texts) expect(fingerprint(text)).toBe(reference(text));
  });

  it('keeps the tags of apps as they were: a tag sent before is still matched', () => {
    const app = { uuid: '0b6b7a52-9d6e-4a53-8c53-4f1b1f8d8e11', id: 'myapp', owner: 'alice', structure: { web: 2 }, updated: new Date(Date.UTC(2026, 10, 28)) };

    expect(appEtag(app)).toBe(`"app-${reference(JSON.stringify([app.uuid, app.id, app.owner, app.structure, app.updated.getTime()]))}"`);
  });
});
