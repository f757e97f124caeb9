import { FAKE_NOW, ManualClock } from '@svc/core/testing';

describe('ManualClock timers', () => {
  it('resolves a sleep only once the clock has moved past it', async () => {
    const clock = new ManualClock();
    let woke = false;
    const sleeping = clock.sleep(100).then(() => {
      woke = true;
    });

    clock.advance(99);
    await Promise.resolve();
    expect(woke).toBe(false);
    expect(clock.pendingTimers).toBe(1);

    clock.advance(1);
    await sleeping;
    expect(woke).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('runs a repeating task at each period passed, each at its own instant, until it is stopped', () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    const stop = clock.every(10, () => seen.push(clock.now().getTime() - Date.parse(FAKE_NOW)));

    clock.advance(35);
    expect(seen).toEqual([10, 20, 30]);
    expect(clock.now().getTime() - Date.parse(FAKE_NOW)).toBe(35);

    stop();
    stop();
    clock.advance(100);
    expect(seen).toEqual([10, 20, 30]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('runs due timers in time order when the clock is set forward, and none when it is set back', () => {
    const clock = new ManualClock();
    const order: string[] = [];
    clock.every(15, () => order.push('tick'));
    const stopEarly = clock.every(5, () => order.push('early'));

    clock.set('2026-11-21T09:00:00.000Z');
    expect(order).toEqual([]);
    clock.set(FAKE_NOW);
    stopEarly();
    clock.set(new Date(Date.parse(FAKE_NOW) + 30));

    expect(order).toEqual(['tick', 'tick']);
    expect(clock.pendingTimers).toBe(1);
  });
});
