import { KeyedMutex } from '../src/mutex';

describe('KeyedMutex', () => {
  it('runs work on one key one at a time, in arrival order', async () => {
    const mutex = new KeyedMutex();
    const events: string[] = [];
    let releaseFirst!: () => void;
    const first = mutex.run('app', async () => {
      events.push('first starts');
      await new Promise<void>((resolve) => {
        releaseFirst = resolve;
      });
      events.push('first ends');
    });
    const second = mutex.run('app', async () => {
      events.push('second runs');
    });
    await new Promise((resolve) => setImmediate(resolve));

    expect(mutex.busy('app')).toBe(true);
    expect(events).toEqual(['first starts']);
    releaseFirst();
    await Promise.all([first, second]);
    expect(events).toEqual(['first starts', 'first ends', 'second runs']);
    expect(mutex.busy('app')).toBe(false);
  });

  it('does not make other keys wait, and goes on after a failure', async () => {
    const mutex = new KeyedMutex();
    let releaseA!: () => void;
    const a = mutex.run('a', () => new Promise<void>((resolve) => (releaseA = resolve)));

    await expect(mutex.run('b', async () => 'b done')).resolves.toBe('b done');
    releaseA();
    await a;
    await expect(mutex.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(mutex.run('a', async () => 'after')).resolves.toBe('after');
  });
});
