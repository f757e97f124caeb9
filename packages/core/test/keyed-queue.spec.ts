import { KeyedQueue } from '@svc/core';

describe('KeyedQueue', () => {
  it('runs tasks of one key in arrival order, one at a time, and of different keys side by side', async () => {
    const queue = new KeyedQueue();
    const events: string[] = [];
    let openA!: () => void;
    const gateA = new Promise<void>((resolve) => {
      openA = resolve;
    });

    const first = queue.run('a', async () => {
      events.push('a1 start');
      await gateA;
      events.push('a1 end');
    });
    const second = queue.run('a', async () => {
      events.push('a2');
    });
    await queue.run('b', async () => {
      events.push('b1');
    });
    expect(events).toEqual(['a1 start', 'b1']);
    openA();
    await Promise.all([first, second]);

    expect(events).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
    expect(queue.size).toBe(0);
  });

  it('goes on with the next task after one fails', async () => {
    const queue = new KeyedQueue();

    await expect(queue.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');

    expect(await queue.run('a', async () => 'next')).toBe('next');
  });

  it('runs work on one key one at a time, in arrival order', async () => {
    const queue = new KeyedQueue();
    const events: string[] = [];
    let releaseFirst!: () => void;
    const first = queue.run('app', async () => {
      events.push('first starts');
      await new Promise<void>((resolve) => {
        releaseFirst = resolve;
      });
      events.push('first ends');
    });
    const second = queue.run('app', async () => {
      events.push('second runs');
    });
    await new Promise((resolve) => setImmediate(resolve));

    expect(queue.busy('app')).toBe(true);
    expect(events).toEqual(['first starts']);
    releaseFirst();
    await Promise.all([first, second]);
    expect(events).toEqual(['first starts', 'first ends', 'second runs']);
    expect(queue.busy('app')).toBe(false);
  });

  it('does not make other keys wait, and goes on after a failure', async () => {
    const queue = new KeyedQueue();
    let releaseA!: () => void;
    const a = queue.run('a', () => new Promise<void>((resolve) => (releaseA = resolve)));

    await expect(queue.run('b', async () => 'b done')).resolves.toBe('b done');
    releaseA();
    await a;
    await expect(queue.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(queue.run('a', async () => 'after')).resolves.toBe('after');
  });

  it('settles a key, or every key, once what was queued so far has settled, failures included', async () => {
    const queue = new KeyedQueue();
    const events: string[] = [];
    let openA!: () => void;
    void queue.run('a', () => new Promise<void>((resolve) => (openA = resolve))).then(() => events.push('a done'));
    void queue.run('b', async () => Promise.reject(new Error('boom'))).catch(() => events.push('b failed'));
    await queue.settled('b');
    expect(events).toEqual(['b failed']);
    const all = queue.settled().then(() => events.push('all settled'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['b failed']);
    openA();
    await all;
    expect(events).toContain('all settled');
    expect(queue.size).toBe(0);
    await queue.settled('unknown');
  });
});
