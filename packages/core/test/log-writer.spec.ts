import { BatchedLogWriter, type LogEntry } from '@svc/core';

const clock = { now: () => new Date('2026-11-25T12:00:00Z') };

describe('BatchedLogWriter', () => {
  it('writes the lines of each app in the order they came, in one append per batch', async () => {
    const appends: Array<{ app: string; entries: LogEntry[] }> = [];
    const writer = new BatchedLogWriter({ append: async (app, entries) => void appends.push({ app, entries }) }, clock);

    writer.write('a', 'a[web.1]', 'one');
    writer.write('b', 'b[web.1]', 'other');
    writer.write('a', 'a[web.1]', 'two');
    await writer.flush();

    expect(appends.map(({ app, entries }) => [app, entries.map((e) => e.message)])).toEqual([
      ['a', ['one', 'two']],
      ['b', ['other']],
    ]);
  });

  it('loses the lines of a failing store without throwing, and writes later ones', async () => {
    let fail = true;
    const written: string[] = [];
    const writer = new BatchedLogWriter(
      {
        append: async (_app, entries) => {
          if (fail) throw new Error('disk full');
          written.push(...entries.map((e) => e.message));
        },
      },
      clock,
    );

    writer.write('a', 'a[web.1]', 'lost');
    await expect(writer.flushApp('a')).resolves.toBeUndefined();
    fail = false;
    writer.write('a', 'a[web.1]', 'kept');
    await writer.flushApp('a');

    expect(written).toEqual(['kept']);
  });
});
