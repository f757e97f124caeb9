import { Ssh2PublicKeyParser } from '@svc/ssh-keys-ssh2';
import { generateEd25519Pair } from '../src';

describe('generateEd25519Pair', () => {
  // ssh2's own generator gives an unreadable pair about once in 256; 1,500 pairs meet that about six times.
  it('gives only pairs whose public key the parser accepts as 256 bits, with the comment', () => {
    const parser = new Ssh2PublicKeyParser();
    const rejected: string[] = [];
    for (let i = 0; i < 1500; i++) {
      const pair = generateEd25519Pair('alice@laptop');
      try {
        const parsed = parser.parse(pair.public);
        if (parsed.bits !== 256 || !parsed.normalized.endsWith(' alice@laptop')) rejected.push(pair.public);
      } catch {
        rejected.push(pair.public);
      }
      if (!pair.private.startsWith('-----BEGIN OPENSSH PRIVATE KEY-----')) rejected.push(pair.private);
    }

    expect(rejected).toEqual([]);
  });
});
