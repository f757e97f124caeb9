import { spawn, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { drainScript, healthScript, parseServiceLogLine } from '../src';

describe('parseServiceLogLine', () => {
  it('splits a line of a service log with details and timestamps into time, task and message', () => {
    const line =
      '2026-11-26T11:55:43.703826237Z com.docker.swarm.node.id=ir1mlaqu0f4s2grrh8j2efalc,com.docker.swarm.service.id=4is5mqi7vogedxg4e647vacjd,com.docker.swarm.task.id=c3pwjmhy5uxq5t150paowvbpk err 3 and more';
    expect(parseServiceLogLine(line)).toEqual({ stamp: '2026-11-26T11:55:43.703826237Z', task: 'c3pwjmhy5uxq5t150paowvbpk', message: 'err 3 and more' });
  });

  it('keeps a line without the expected prefix as the message', () => {
    expect(parseServiceLogLine('plain output')).toEqual({ stamp: '', task: '', message: 'plain output' });
    expect(parseServiceLogLine('2026-11-26T11:55:43Z no details here')).toEqual({ stamp: '2026-11-26T11:55:43Z', task: '', message: 'no details here' });
  });
});

describe('healthScript', () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    server = createServer((socket) => socket.end());
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    port = (server.address() as { port: number }).port;
  });

  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it('succeeds when a socket listens on the port and fails when none does, with only sh and grep', async () => {
    expect(spawnSync('/bin/sh', ['-c', healthScript(port, undefined)]).status).toBe(0);
    // A port that was just free, and is again once its listener closed.
    const other = createServer();
    await new Promise<void>((done) => other.listen(0, '127.0.0.1', done));
    const closed = (other.address() as { port: number }).port;
    await new Promise<void>((done) => other.close(() => done()));
    expect(spawnSync('/bin/sh', ['-c', healthScript(closed, '')]).status).not.toBe(0);
  });

  it('asks HEALTHCHECK_URL with wget or curl when it is set, on the task itself', () => {
    const script = healthScript(5000, 'https://example.com/health?deep=1');
    expect(script).toContain("'http://127.0.0.1:5000/health?deep=1'");
    expect(script).toMatch(/wget .* \|\| |else curl/);
  });
});

describe('drainScript', () => {
  it('passes SIGTERM on to the command only after the drain time, and exits with its status', async () => {
    const command = 'trap \'echo "got TERM"; exit 7\' TERM; echo started; while true; do sleep 0.1; done';
    const child = spawn('/bin/sh', ['-c', drainScript(1000), 'svc-drain', '/bin/sh', '-c', command]);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    for (let waited = 0; !output.includes('started') && waited < 5000; waited += 50) await new Promise((done) => setTimeout(done, 50));
    const signalled = Date.now();
    child.kill('SIGTERM');
    await new Promise((done) => setTimeout(done, 500));
    // Still serving half-way through the drain.
    expect(output).not.toContain('got TERM');
    const code = await exited;
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(900);
    expect(output).toContain('got TERM');
    expect(code).toBe(7);
  });

  it('exits with the command status when the command ends by itself', () => {
    expect(spawnSync('/bin/sh', ['-c', drainScript(3000), 'svc-drain', '/bin/sh', '-c', 'exit 3']).status).toBe(3);
  });
});
