import { CappedOutput, LineSplitter, OutputTail, utf8Prefix } from '../src/output';

describe('LineSplitter', () => {
  it('joins lines across chunks, drops CR before LF, and keeps a partial last line until the end', () => {
    const lines = new LineSplitter();
    expect(lines.push(Buffer.from('one\r\ntw'))).toEqual(['one']);
    expect(lines.push(Buffer.from('o\nthree'))).toEqual(['two']);
    expect(lines.end()).toEqual(['three']);
    expect(lines.end()).toEqual([]);
  });

  it('does not break a multi-byte character split between chunks', () => {
    const bytes = Buffer.from('café\n');
    const lines = new LineSplitter();
    expect([...lines.push(bytes.subarray(0, 4)), ...lines.push(bytes.subarray(4))]).toEqual(['café']);
  });

  it('cuts lines longer than the maximum into several', () => {
    const lines = new LineSplitter(4);
    expect(lines.push(Buffer.from('abcdefghij\n'))).toEqual(['abcd', 'efgh', 'ij']);
    expect(lines.push(Buffer.from('123456'))).toEqual(['1234']);
    expect(lines.end()).toEqual(['56']);
  });
});

describe('utf8Prefix', () => {
  it('never ends inside a character', () => {
    const bytes = Buffer.from('aé€');
    expect(utf8Prefix(bytes, 2).toString()).toBe('a');
    expect(utf8Prefix(bytes, 3).toString()).toBe('aé');
    expect(utf8Prefix(bytes, 5).toString()).toBe('aé');
    expect(utf8Prefix(bytes, 6).toString()).toBe('aé€');
  });
});

describe('CappedOutput', () => {
  it('returns everything, with the notes, when it fits', () => {
    const output = new CappedOutput(64);
    output.push(Buffer.from('hello\n'));
    expect(output.text()).toBe('hello\n');
    expect(output.text(['killed after the timeout of 1 s'])).toBe('hello\n\n[killed after the timeout of 1 s]');
  });

  it('cuts longer output so that the text with its notes stays within the limit', () => {
    const output = new CappedOutput(100);
    for (let i = 0; i < 10; i++) output.push(Buffer.alloc(50, 'x'));
    const text = output.text(['killed after the timeout of 1 s']);
    expect(output.received).toBe(500);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(100);
    expect(text).toMatch(/^x+\n\[output truncated at 100 bytes\]\n\[killed after the timeout of 1 s\]$/);
  });

  it('keeps output of exactly the limit whole', () => {
    const output = new CappedOutput(10);
    output.push(Buffer.from('0123456789'));
    expect(output.text()).toBe('0123456789');
  });
});

describe('OutputTail', () => {
  it('keeps the last 20 non-blank lines, escaped and cut at 200 characters', () => {
    const tail = new OutputTail();
    for (let n = 1; n <= 25; n++) tail.push(`line ${n}`);
    tail.push('   ');
    tail.push('\u001b[31mred\u001b[0m');
    tail.push('x'.repeat(300));
    expect(tail.last).toHaveLength(20);
    expect(tail.last[0]).toBe('line 8');
    expect(tail.last).toContain('\\x1b[31mred\\x1b[0m');
    expect(tail.last.at(-1)).toBe(`${'x'.repeat(200)}…`);
  });

  it('notes the last lines one after the other after the colon, and nothing without output', () => {
    const tail = new OutputTail();
    expect(tail.note()).toBe('');
    tail.push('only');
    expect(tail.note()).toBe('; last output: only');
    tail.push('second');
    expect(tail.note()).toBe('; last output: only\nsecond');
    expect(tail.note(1)).toBe('; last output: second');
    tail.clear();
    expect(tail.note()).toBe('');
  });
});
