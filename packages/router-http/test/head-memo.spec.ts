import { HeadMemo, MEMO_MAX_CHARS } from '../src/head-memo';
import { HttpError, parseRequestHead } from '../src/http1';

describe('HeadMemo', () => {
  const text = 'GET / HTTP/1.1\r\nHost: www.example.com\r\nAccept: */*';

  it('parses a head once while the same text repeats, and gives back what was made of it for the same key', () => {
    const memo = new HeadMemo<ReturnType<typeof parseRequestHead>>();
    let parses = 0;
    const parse = (t: string) => {
      parses += 1;
      return parseRequestHead(t);
    };
    const first = memo.parsed(text, parse);
    expect(memo.parsed(`${text}`, parse)).toBe(first);
    expect(parses).toBe(1);
    expect(memo.madeOf(first, 0)).toBeNull();
    expect(memo.remember(first, 0, 'made')).toBe('made');
    expect(memo.madeOf(first, 0)).toBe('made');
    expect(memo.madeOf(first, 1)).toBeNull();
    const other = memo.parsed(`${text}\r\nX-Other: 1`, parse);
    expect(parses).toBe(2);
    expect(other.fields).toHaveLength(3);
    expect(memo.madeOf(other, 0)).toBeNull();
  });

  it('never remembers a head that fails parsing, nor a long one', () => {
    const memo = new HeadMemo<ReturnType<typeof parseRequestHead>>();
    const bad = 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked';
    expect(() => memo.parsed(bad, parseRequestHead)).toThrow(HttpError);
    expect(() => memo.parsed(bad, parseRequestHead)).toThrow(HttpError);
    const long = `${text}\r\nX-Long: ${'a'.repeat(MEMO_MAX_CHARS)}`;
    const parsed = memo.parsed(long, parseRequestHead);
    expect(memo.parsed(long, parseRequestHead)).not.toBe(parsed);
    memo.remember(parsed, 0, 'made');
    expect(memo.madeOf(parsed, 0)).toBeNull();
  });
});
