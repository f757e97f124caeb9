import { blockBytes, certificatePem, pemBlocks } from '../src/pem';

describe('pemBlocks', () => {
  it('returns every block in order with its label, ignoring text around them', () => {
    const text = 'intro\n-----BEGIN EC PARAMETERS-----\nBggq\n-----END EC PARAMETERS-----\nmiddle\n'
      + '-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n';

    expect(pemBlocks(text).map((block) => block.label)).toEqual(['EC PARAMETERS', 'EC PRIVATE KEY']);
  });

  it('ignores a block whose END label differs from its BEGIN label', () => {
    expect(pemBlocks('-----BEGIN CERTIFICATE-----\nAAAA\n-----END PRIVATE KEY-----\n')).toEqual([]);
  });
});

describe('blockBytes', () => {
  it('decodes a body spread over lines with CRLF ends', () => {
    const [block] = pemBlocks('-----BEGIN X-----\r\naGVs\r\nbG8=\r\n-----END X-----');

    expect(block && blockBytes(block)?.toString()).toBe('hello');
  });

  it.each(['a*b=', 'Proc-Type: 4,ENCRYPTED\n\nAAAA', 'AA=A'])('returns null for the body %p', (body) => {
    const [block] = pemBlocks(`-----BEGIN X-----\n${body}\n-----END X-----`);

    expect(block && blockBytes(block)).toBeNull();
  });
});

describe('certificatePem', () => {
  it('wraps base64 at 64 characters with LF line ends and a final newline', () => {
    const pem = certificatePem(Buffer.alloc(60, 0xab));

    const lines = pem.split('\n');
    expect(lines[0]).toBe('-----BEGIN CERTIFICATE-----');
    expect(lines[1]).toHaveLength(64);
    expect(lines[2]).toBe(Buffer.alloc(60, 0xab).toString('base64').slice(64));
    expect(lines[3]).toBe('-----END CERTIFICATE-----');
    expect(lines[4]).toBe('');
  });
});
