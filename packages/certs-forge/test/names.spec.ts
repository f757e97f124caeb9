import { asn1 } from 'node-forge';
import { commonName, formatName, type Attribute } from '../src/names';

const OID = { CN: '2.5.4.3', O: '2.5.4.10', C: '2.5.4.6', UID: '0.9.2342.19200300.100.1.1', EMAIL: '1.2.840.113549.1.9.1' };

function text(oid: string, value: string): Attribute {
  return { oid, text: value, node: asn1.create(asn1.Class.UNIVERSAL, asn1.Type.UTF8, false, value) };
}

describe('formatName', () => {
  it('writes the last RDN first, joined by commas', () => {
    const name = [[text(OID.C, 'US')], [text(OID.O, 'Example')], [text(OID.CN, 'Example CA')]];

    expect(formatName(name)).toBe('CN=Example CA,O=Example,C=US');
  });

  it('joins the attributes of a multi-valued RDN with +', () => {
    expect(formatName([[text(OID.CN, 'alice'), text(OID.UID, 'a1')]])).toBe('CN=alice+UID=a1');
  });

  it('writes types outside the RFC 4514 table as dotted OIDs', () => {
    expect(formatName([[text(OID.EMAIL, 'a@example.com')]])).toBe('1.2.840.113549.1.9.1=a@example.com');
  });

  it.each([
    ['special characters', 'a,b+c"d\\e;f<g>h', 'a\\,b\\+c\\"d\\\\e\\;f\\<g\\>h'],
    ['a leading #', '#tag', '\\#tag'],
    ['a # later on', 'a#b', 'a#b'],
    ['leading and trailing spaces', ' x y ', '\\ x y\\ '],
    ['a single space', ' ', '\\ '],
    ['control characters', 'a\nb\u0000', 'a\\0Ab\\00'],
    ['non-ASCII text', 'M\u00fcnchen \u65e5\u672c', 'M\u00fcnchen \u65e5\u672c'],
  ])('escapes %s as RFC 4514 requires', (_name, value, expected) => {
    expect(formatName([[text(OID.O, value)]])).toBe(`O=${expected}`);
  });

  it('writes a value that is not a string as # and the hex of its DER', () => {
    const node = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OCTETSTRING, false, '\u0001\u00ff');

    expect(formatName([[{ oid: OID.O, text: null, node }]])).toBe('O=#040201ff');
  });

  it('of an empty name is the empty string', () => {
    expect(formatName([])).toBe('');
  });
});

describe('commonName', () => {
  it('returns the first CN', () => {
    expect(commonName([[text(OID.O, 'Org')], [text(OID.CN, 'first')], [text(OID.CN, 'second')]])).toBe('first');
  });

  it('returns null without a CN or with an empty one', () => {
    expect(commonName([[text(OID.O, 'Org')]])).toBeNull();
    expect(commonName([[text(OID.CN, '')]])).toBeNull();
  });
});
