import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  NotFound,
  ValidationFailed,
  assertPageExists,
  formatLogLine,
  formatTimestamp,
  parsePageRequest,
  sliceOf,
} from '@svc/core';
import { thrownBy } from './support/world';

describe('parsePageRequest', () => {
  it('defaults to page 1 of 100', () => {
    expect(DEFAULT_PAGE_SIZE).toBe(100);
    expect(parsePageRequest(undefined, undefined, true)).toEqual({ page: 1, pageSize: 100 });
  });

  it('reads page and, when honoured, page_size', () => {
    expect(parsePageRequest('3', '25', true)).toEqual({ page: 3, pageSize: 25 });
  });

  it('ignores page_size when the version does not honour it, even an invalid one', () => {
    expect(parsePageRequest('2', '25', false)).toEqual({ page: 2, pageSize: 100 });
    expect(parsePageRequest('2', 'abc', false)).toEqual({ page: 2, pageSize: 100 });
  });

  it('clamps page_size to 1000', () => {
    expect(MAX_PAGE_SIZE).toBe(1000);
    expect(parsePageRequest(undefined, '1000', true).pageSize).toBe(1000);
    expect(parsePageRequest(undefined, '1001', true).pageSize).toBe(1000);
    expect(parsePageRequest(undefined, '999999', true).pageSize).toBe(1000);
  });

  it.each([['0'], ['-1'], ['abc'], ['1.5'], [''], ['1e3'], [' 2']])('refuses page %p with 400 on page', (page) => {
    const error = thrownBy(() => parsePageRequest(page, undefined, true));
    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields).toEqual({ page: ['A valid positive integer is required.'] });
  });

  it.each([['0'], ['-1'], ['abc']])('refuses page_size %p with 400 on page_size', (size) => {
    const error = thrownBy(() => parsePageRequest('1', size, true));
    expect(error.fields).toEqual({ page_size: ['A valid positive integer is required.'] });
  });

  it('reports a bad page and a bad page_size together', () => {
    const error = thrownBy(() => parsePageRequest('0', 'x', true));
    expect(Object.keys(error.fields ?? {}).sort()).toEqual(['page', 'page_size']);
  });
});

describe('sliceOf and assertPageExists', () => {
  it('maps a page to an offset and limit', () => {
    expect(sliceOf({ page: 1, pageSize: 100 })).toEqual({ offset: 0, limit: 100 });
    expect(sliceOf({ page: 3, pageSize: 25 })).toEqual({ offset: 50, limit: 25 });
  });

  it('page 1 exists even for an empty list', () => {
    expect(() => assertPageExists({ page: 1, pageSize: 100 }, 0)).not.toThrow();
  });

  it('a later page exists while it starts before the end', () => {
    expect(() => assertPageExists({ page: 2, pageSize: 10 }, 11)).not.toThrow();
  });

  it('a page past the end is NotFound', () => {
    const error = thrownBy(() => assertPageExists({ page: 2, pageSize: 10 }, 10));
    expect(error).toBeInstanceOf(NotFound);
    expect(error.message).toBe('Invalid page.');
    expect(() => assertPageExists({ page: 2, pageSize: 100 }, 0)).toThrow(NotFound);
  });
});

describe('timestamps and log lines', () => {
  it('formats application timestamps as YYYY-MM-DDTHH:MM:SSUTC', () => {
    expect(formatTimestamp(new Date('2026-11-21T10:00:00.123Z'))).toBe('2026-11-21T10:00:00UTC');
    expect(formatTimestamp(new Date('2027-01-02T03:04:05.999Z'))).toBe('2027-01-02T03:04:05UTC');
  });

  it('formats a log entry as "<timestamp> <source>: <message>"', () => {
    expect(formatLogLine({ time: new Date('2026-11-21T10:00:01Z'), source: 'myapp[web.1]', message: 'listening on 5000' })).toBe(
      '2026-11-21T10:00:01UTC myapp[web.1]: listening on 5000',
    );
  });
});
