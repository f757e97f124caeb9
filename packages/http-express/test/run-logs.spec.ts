import request from 'supertest';
import { adminAndAlice, auth, createApp, deploy, harness } from './harness';

describe('Run and logs by version', () => {
  const h = harness();
  let alice: string;
  beforeAll(async () => {
    ({ alice } = await adminAndAlice(h.app));
    await createApp(h.app, alice, 'myapp');
    await deploy(h.app, alice, 'myapp');
    h.scheduler.setRunResult({ exitCode: 3, output: 'hello\n' });
  });

  const run = (version: string) =>
    request(h.app).post('/v1/apps/myapp/run').set('Authorization', auth(alice)).set('SVC_API_VERSION', version).send({ command: 'echo hello' });

  it.each(['1.0', '1.4'])('run at %s answers {rc, output}', async (version) => {
    const res = await run(version).expect(200);
    expect(res.body).toEqual({ rc: 3, output: 'hello\n' });
  });

  it.each(['1.5', '1.7'])('run at %s answers [rc, output]', async (version) => {
    const res = await run(version).expect(200);
    expect(res.body).toEqual([3, 'hello\n']);
  });

  it('run without a command is 400 on the field', async () => {
    const res = await request(h.app).post('/v1/apps/myapp/run').set('Authorization', auth(alice)).send({}).expect(400);
    expect(res.body).toEqual({ command: ['This field is required.'] });
  });

  const logs = (version: string, query = '') =>
    request(h.app).get(`/v1/apps/myapp/logs${query}`).set('Authorization', auth(alice)).set('SVC_API_VERSION', version);

  it('logs at 1.7 are text/plain lines ending with a newline', async () => {
    const res = await logs('1.7').expect(200);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.text.endsWith('\n')).toBe(true);
    const lines = res.text.slice(0, -1).split('\n');
    expect(lines[0]).toBe('2026-11-21T10:00:00UTC svc[api]: alice created initial release');
    expect(lines).toContain("2026-11-21T10:00:00UTC svc[api]: alice runs 'echo hello'");
  });

  it('logs before 1.7 are a JSON string of the same text', async () => {
    const text = (await logs('1.7')).text;
    const res = await logs('1.6').expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toBe(text);
  });

  it('log_lines is honoured from 1.3 and ignored before', async () => {
    const all = (await logs('1.7')).text.split('\n').filter((l) => l !== '');
    expect(all.length).toBeGreaterThan(2);
    const two = await logs('1.3', '?log_lines=2').expect(200);
    expect(two.body).toBe(`${all.slice(-2).join('\n')}\n`);
    const ignored = await logs('1.2', '?log_lines=2').expect(200);
    expect(ignored.body).toBe(`${all.join('\n')}\n`);
    await logs('1.2', '?log_lines=abc').expect(200);
  });

  it('an invalid or repeated log_lines is 400 on the field', async () => {
    await logs('1.7', '?log_lines=0').expect(400, { log_lines: ['A valid positive integer is required.'] });
    await logs('1.7', '?log_lines=1&log_lines=2').expect(400, { log_lines: ['A valid positive integer is required.'] });
  });

  it('logs of an app without lines are an empty body', async () => {
    const t = harness();
    const { alice: token } = await adminAndAlice(t.app);
    await createApp(t.app, token, 'quiet');
    await t.logs.remove('quiet');
    const res = await request(t.app).get('/v1/apps/quiet/logs').set('Authorization', auth(token)).expect(200);
    expect(res.text).toBe('');
    const old = await request(t.app).get('/v1/apps/quiet/logs').set('Authorization', auth(token)).set('SVC_API_VERSION', '1.6').expect(200);
    expect(old.body).toBe('');
  });
});
