import { CappedOutput, LineSplitter, OutputTail, lastOutputNote, utf8Prefix } from '@svc/core';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (data: Uint8Array): string => new TextDecoder().decode(data);

describe('LineSplitter', () => {
  it('joins lines across chunks, drops CR before LF, and keeps a partial last line until the end', () => {
    const lines = new LineSplitter();
    expect(lines.push(bytes('one\r\ntw'))).toEqual(['one']);
    expect(lines.push(bytes('o\nthree'))).toEqual(['two']);
    expect(lines.end()).toEqual(['three']);
    expect(lines.end()).toEqual([]);
  });

  it('does not break a multi-byte character split between chunks', () => {
    const data = bytes('café\n');
    const lines = new LineSplitter();
    expect([...lines.push(data.subarray(0, 4)), ...lines.push(data.subarray(4))]).toEqual(['café']);
  });

  it('takes Buffers as they come from streams', () => {
    const lines = new LineSplitter();
    expect(lines.push(Buffer.from('a\nb\n'))).toEqual(['a', 'b']);
  });

  it('cuts lines longer than the maximum into several', () => {
    const lines = new LineSplitter(4);
    expect(lines.push(bytes('abcdefghij\n'))).toEqual(['abcd', 'efgh', 'ij']);
    expect(lines.push(bytes('123456'))).toEqual(['1234']);
    expect(lines.end()).toEqual(['56']);
  });
});

describe('utf8Prefix', () => {
  it('never ends inside a character', () => {
    const data = bytes('aé€');
    expect(text(utf8Prefix(data, 2))).toBe('a');
    expect(text(utf8Prefix(data, 3))).toBe('aé');
    expect(text(utf8Prefix(data, 5))).toBe('aé');
    expect(text(utf8Prefix(data, 6))).toBe('aé€');
  });
});

describe('CappedOutput', () => {
  it('returns everything, with the notes, when it fits', () => {
    const output = new CappedOutput(64);
    output.push(bytes('hello\n'));
    expect(output.text()).toBe('hello\n');
    expect(output.text(['killed after the timeout of 1 s'])).toBe('hello\n\n[killed after the timeout of 1 s]');
  });

  it('cuts longer output so that the text with its notes stays within the limit', () => {
    const output = new CappedOutput(100);
    for (let i = 0; i < 10; i++) output.push(Buffer.alloc(50, 'x'));
    const result = output.text(['killed after the timeout of 1 s']);
    expect(output.received).toBe(500);
    expect(Buffer.byteLength(result)).toBeLessThanOrEqual(100);
    expect(result).toMatch(/^x+\n\[output truncated at 100 bytes\]\n\[killed after the timeout of 1 s\]$/);
  });

  it('keeps output of exactly the limit whole, and never cuts a character', () => {
    const exact = new CappedOutput(10);
    exact.push(bytes('0123456789'));
    expect(exact.text()).toBe('0123456789');
    const wide = new CappedOutput(40);
    wide.push(bytes('€'.repeat(30)));
    const result = wide.text();
    expect(Buffer.byteLength(result)).toBeLessThanOrEqual(40);
    expect(result).not.toContain('\ufffd');
    expect(result).toMatch(/^€+\n\[output truncated at 40 bytes\]$/);
  });
});

describe('OutputTail and lastOutputNote', () => {
  it('keeps the last 20 non-blank lines, oldest first, escaped and cut at 200 characters', () => {
    const tail = new OutputTail();
    for (let n = 1; n <= 25; n++) tail.push(`line ${n}`);
    tail.push('   ');
    tail.push('\u001b[31mred\u001b[0m');
    tail.push('x'.repeat(300));
    expect(tail.lines()).toHaveLength(20);
    expect(tail.lines()[0]).toBe('line 8');
    expect(tail.lines()).toContain('\\x1b[31mred\\x1b[0m');
    expect(tail.lines().at(-1)).toBe(`${'x'.repeat(200)}…`);
    tail.clear();
    expect(tail.lines()).toEqual([]);
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

  it('shows every line on a line of its own, blank ones left out, each escaped and cut at 200 characters', () => {
    const note = lastOutputNote(['Error: boom', '', '  at main.js:3  ', `\u001b[31mred\u001b[0m`, 'x'.repeat(300)]);
    expect(note).toBe(`; last output: Error: boom\nat main.js:3\n\\x1b[31mred\\x1b[0m\n${'x'.repeat(200)}…`);
    expect(lastOutputNote(lastOutputNote(['\u001b', 'y'.repeat(300)]).slice('; last output: '.length).split('\n'))).toBe(
      lastOutputNote(['\u001b', 'y'.repeat(300)]),
    );
  });

  it('keeps a single line on the reason\'s line, and is empty without output', () => {
    expect(lastOutputNote('bye')).toBe('; last output: bye');
    expect(lastOutputNote(null)).toBe('');
    expect(lastOutputNote(['', '  '])).toBe('');
  });
});
