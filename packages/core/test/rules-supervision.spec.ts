import {
  CrashHistory,
  answerOf,
  containerLabel,
  endpointsOf,
  formatSeconds,
  healthcheckPath,
  healthcheckUrl,
  isReadyStatus,
  notReadyReason,
  outputSource,
  probeWaitMs,
  isRoutedType,
  readinessCheck,
  restartBackoff,
  restartDelay,
  runTimedOut,
  runTimeoutNote,
  startTimeoutOf,
  urlHost,
  RUN_TIMEOUT_EXIT_CODE,
} from '@svc/core';

describe('healthcheckUrl', () => {
  it('asks the container itself for the path of HEALTHCHECK_URL, a path or a URL, with its query', () => {
    expect(healthcheckUrl('/health', '10.0.0.2', 5000)).toBe('http://10.0.0.2:5000/health');
    expect(healthcheckUrl('health?deep=1', '127.0.0.1', 20001)).toBe('http://127.0.0.1:20001/health?deep=1');
    expect(healthcheckUrl('https://example.com/ready?x=1', '127.0.0.1', 80)).toBe('http://127.0.0.1:80/ready?x=1');
    expect(healthcheckUrl('  ', '127.0.0.1', 80)).toBeNull();
    expect(healthcheckUrl(undefined, '127.0.0.1', 80)).toBeNull();
    expect(healthcheckPath('http://[bad/')).toBe('/');
  });

  it('writes an IPv6 host in brackets, whichever scheduler asks', () => {
    expect(healthcheckUrl('/health', 'fd00::2', 5000)).toBe('http://[fd00::2]:5000/health');
    expect(healthcheckUrl('/health', '::1', 20000)).toBe('http://[::1]:20000/health');
    expect(new URL(healthcheckUrl('/h', '::1', 20000) as string).port).toBe('20000');
    expect(urlHost('[::1]')).toBe('[::1]');
    expect(urlHost('localhost')).toBe('localhost');
  });
});

describe('readinessCheck', () => {
  it('lets a type the router does not send to settle, and checks a routed one (web, cmd) by HEALTHCHECK_URL or else its port', () => {
    expect(readinessCheck('worker', { HEALTHCHECK_URL: '/h' }, '127.0.0.1', 1)).toEqual({ kind: 'settle' });
    expect(readinessCheck('cmd', {}, '127.0.0.1', 3)).toEqual({ kind: 'tcp', host: '127.0.0.1', port: 3 });
    expect([isRoutedType('web'), isRoutedType('cmd'), isRoutedType('worker'), isRoutedType('release')]).toEqual([true, true, false, false]);
    expect(readinessCheck('web', {}, '::1', 2)).toEqual({ kind: 'tcp', host: '::1', port: 2 });
    expect(readinessCheck('web', { HEALTHCHECK_URL: '/h' }, '::1', 2)).toEqual({ kind: 'http', url: 'http://[::1]:2/h' });
  });

  it('counts only a 2xx answer as up and names the last answer', () => {
    expect([200, 204, 299].every(isReadyStatus)).toBe(true);
    expect([null, 199, 301, 503].some(isReadyStatus)).toBe(false);
    expect(answerOf(null)).toBe('no answer');
    expect(answerOf(503)).toBe('status 503');
  });

  it('waits 0.1 to 2 s per check, no later than the deadline when it can', () => {
    expect(probeWaitMs(10_000, 0)).toBe(2000);
    expect(probeWaitMs(1500, 1000)).toBe(500);
    expect(probeWaitMs(1000, 1000)).toBe(100);
  });

  it('says why a web container is not up at its deadline', () => {
    expect(notReadyReason({ kind: 'http', url: 'http://[::1]:2/health?x=1' }, 2500, 'status 503')).toBe(
      'HEALTHCHECK_URL /health did not answer 2xx within 2.5 s (last: status 503)',
    );
    expect(notReadyReason({ kind: 'tcp', host: 'h', port: 5000 }, 30_000, 'no answer')).toBe('it did not accept connections on port 5000 within 30 s');
  });

  it('takes HEALTHCHECK_TIMEOUT (seconds) when shorter than the scheduler\'s limit', () => {
    expect(startTimeoutOf(30_000, { HEALTHCHECK_TIMEOUT: '5' })).toBe(5000);
    expect(startTimeoutOf(30_000, { HEALTHCHECK_TIMEOUT: '90' })).toBe(30_000);
    expect(startTimeoutOf(30_000, { HEALTHCHECK_TIMEOUT: 'soon' })).toBe(30_000);
    expect(startTimeoutOf(30_000, {})).toBe(30_000);
  });
});

describe('restart back-off', () => {
  it('doubles the wait with each failure in a row up to the longest', () => {
    const backoff = restartBackoff({ initialMs: 100, maxMs: 1000 });
    expect(backoff).toEqual({ initialMs: 100, maxMs: 1000, resetAfterMs: 60_000 });
    expect([0, 1, 2, 3, 4, 5].map((n) => restartDelay(backoff, n))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(restartBackoff()).toEqual({ initialMs: 1000, maxMs: 60_000, resetAfterMs: 60_000 });
  });

  it('starts over from the first wait after a container stayed up long enough, not after a short run', () => {
    const history = new CrashHistory(restartBackoff({ initialMs: 100, maxMs: 10_000, resetAfterMs: 1000 }));
    history.up(0);
    expect(history.failed(500)).toBe(100);
    expect(history.failed(600)).toBe(200);
    history.up(700);
    expect(history.failed(1000)).toBe(400);
    history.up(2000);
    expect(history.failed(3000)).toBe(100);
  });
});

describe('naming and endpoints', () => {
  const spec = (num: number, type = 'web') => ({ id: `c${num}`, app: 'myapp', type, num, release: 3 });

  it('names a container in the scheduler\'s lines and its output\'s source', () => {
    expect(containerLabel(spec(1))).toBe('web.1 (v3)');
    expect(outputSource(spec(2, 'worker'))).toBe('myapp[worker.2]');
    expect(formatSeconds(1000)).toBe('1 s');
    expect(formatSeconds(2500)).toBe('2.5 s');
    expect(formatSeconds(60_000)).toBe('60 s');
  });

  it('lists the up containers of one type of an app with a known address, in number order', () => {
    const endpoints = endpointsOf(
      [
        { spec: spec(2), state: 'up', host: '10.0.0.3', port: 5000 },
        { spec: spec(1), state: 'up', host: '10.0.0.2', port: 5000 },
        { spec: spec(3), state: 'crashed', host: '10.0.0.4', port: 5000 },
        { spec: spec(4), state: 'up', host: null, port: 5000 },
        { spec: spec(5, 'worker'), state: 'up', host: '10.0.0.5', port: 5000 },
      ],
      'myapp',
      'web',
    );
    expect(endpoints).toEqual([
      { host: '10.0.0.2', port: 5000, id: 'c1' },
      { host: '10.0.0.3', port: 5000, id: 'c2' },
    ]);
  });

  it('ends a timed-out command\'s output with the note the release phase recognises', () => {
    expect(runTimedOut({ exitCode: RUN_TIMEOUT_EXIT_CODE, output: `x\n[${runTimeoutNote(5)}]` })).toBe(true);
  });
});
