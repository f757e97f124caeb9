const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** One PEM block: its label and the text between its armour lines. */
export interface PemBlock {
  label: string;
  body: string;
  /** The whole block, armour included. */
  text: string;
}

/** Every PEM block of the text, in order. */
export function pemBlocks(text: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  const pattern = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
  for (const match of text.matchAll(pattern)) {
    blocks.push({ label: match[1] ?? '', body: match[2] ?? '', text: match[0] });
  }
  return blocks;
}

/** The bytes of a block without headers, or null if its body is not strict base64. */
export function blockBytes(block: PemBlock): Buffer | null {
  const compact = block.body.replace(/\s+/g, '');
  if (!BASE64.test(compact)) return null;
  const bytes = Buffer.from(compact, 'base64');
  return bytes.toString('base64') === compact ? bytes : null;
}

/** DER bytes as a PEM certificate with 64-character lines and `\n` line ends. */
export function certificatePem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return ['-----BEGIN CERTIFICATE-----', ...lines, '-----END CERTIFICATE-----', ''].join('\n');
}
