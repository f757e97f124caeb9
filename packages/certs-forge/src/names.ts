import { asn1, util } from 'node-forge';

// String types that asn1.Type of the typings does not name.
const NUMERIC_STRING = 18;
const TELETEX_STRING = 20;
const VISIBLE_STRING = 26;
const UNIVERSAL_STRING = 28;

const OID_COMMON_NAME = '2.5.4.3';

/** Attribute types that RFC 4514 (section 3) writes by name; every other type is a dotted OID. */
const RFC4514_NAMES: Readonly<Record<string, string>> = {
  [OID_COMMON_NAME]: 'CN',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
  '2.5.4.9': 'STREET',
  '0.9.2342.19200300.100.1.25': 'DC',
  '0.9.2342.19200300.100.1.1': 'UID',
};

/** One attribute of a distinguished name: its OID and its value as text (null when not a string type). */
export interface Attribute {
  oid: string;
  text: string | null;
  node: asn1.Asn1;
}

/** The issuer and subject names of a certificate, each a list of RDNs in encoding order. */
export interface CertificateNames {
  issuer: Attribute[][];
  subject: Attribute[][];
}

function children(node: asn1.Asn1 | undefined): asn1.Asn1[] {
  return node !== undefined && Array.isArray(node.value) ? node.value : [];
}

function decodeUtf32(bytes: Buffer): string | null {
  if (bytes.length % 4 !== 0) return null;
  let text = '';
  for (let offset = 0; offset < bytes.length; offset += 4) {
    const code = bytes.readUInt32BE(offset);
    if (code > 0x10ffff) return null;
    text += String.fromCodePoint(code);
  }
  return text;
}

function decodeString(node: asn1.Asn1): string | null {
  if (node.tagClass !== asn1.Class.UNIVERSAL || typeof node.value !== 'string') return null;
  const bytes = Buffer.from(node.value, 'binary');
  switch (node.type as number) {
    case asn1.Type.UTF8:
      return bytes.toString('utf8');
    case asn1.Type.BMPSTRING:
      return bytes.length % 2 === 0 ? Buffer.from(bytes).swap16().toString('utf16le') : null;
    case UNIVERSAL_STRING:
      return decodeUtf32(bytes);
    case asn1.Type.PRINTABLESTRING:
    case asn1.Type.IA5STRING:
    case NUMERIC_STRING:
    case TELETEX_STRING:
    case VISIBLE_STRING:
      return bytes.toString('latin1');
    default:
      return null;
  }
}

function readName(name: asn1.Asn1 | undefined): Attribute[][] {
  if (name === undefined || name.type !== asn1.Type.SEQUENCE) throw new Error('Certificate name missing');
  return children(name).map((rdn) => children(rdn).map((pair) => {
    const [type, value] = children(pair);
    if (type === undefined || value === undefined || typeof type.value !== 'string') {
      throw new Error('Malformed certificate name');
    }
    return { oid: asn1.derToOid(type.value), text: decodeString(value), node: value };
  }));
}

/**
 * Reads the issuer and subject names straight from the certificate's DER, so that the
 * result does not depend on which library read the rest of the certificate.
 */
export function readCertificateNames(der: Buffer): CertificateNames {
  const root = asn1.fromDer(util.createBuffer(der.toString('binary')));
  const fields = children(children(root)[0]);
  // The version field is optional ([0] EXPLICIT, absent for v1 certificates).
  const offset = fields[0]?.tagClass === asn1.Class.CONTEXT_SPECIFIC ? 1 : 0;
  return { issuer: readName(fields[offset + 2]), subject: readName(fields[offset + 4]) };
}

function escapeValue(value: string): string {
  const chars = [...value];
  return chars.map((char, index) => {
    if ('\\"+,;<>'.includes(char)) return `\\${char}`;
    if (char === ' ' && (index === 0 || index === chars.length - 1)) return '\\ ';
    if (char === '#' && index === 0) return '\\#';
    const code = char.codePointAt(0) ?? 0;
    if (code < 0x20 || code === 0x7f) return `\\${code.toString(16).padStart(2, '0').toUpperCase()}`;
    return char;
  }).join('');
}

function formatAttribute(attribute: Attribute): string {
  const type = RFC4514_NAMES[attribute.oid] ?? attribute.oid;
  const value = attribute.text === null
    ? `#${Buffer.from(asn1.toDer(attribute.node).getBytes(), 'binary').toString('hex')}`
    : escapeValue(attribute.text);
  return `${type}=${value}`;
}

/**
 * The RFC 4514 string of a name: the last RDN first, RDNs joined by `,`, the attributes of
 * a multi-valued RDN by `+`, RFC 4514's short names (CN, O, OU, C, ...), other types as
 * dotted OIDs, values escaped as RFC 4514 requires; e.g. `CN=Example CA,O=Example`.
 */
export function formatName(rdns: Attribute[][]): string {
  return [...rdns].reverse().map((rdn) => rdn.map(formatAttribute).join('+')).join(',');
}

/** The first common name of a name, or null when it has none (or an empty one). */
export function commonName(rdns: Attribute[][]): string | null {
  const found = rdns.flat().find((attribute) => attribute.oid === OID_COMMON_NAME);
  return found?.text ? found.text : null;
}
