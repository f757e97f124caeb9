import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { main } from '../src/program';

/** The controller's answer to a rollback that would stop the app (docs/api.md, 10.5). */
const REFUSAL = 'Release v1 has no build: rolling back to it would stop every process of myapp. Releases that can be rolled back to: v2 to v4.';

async function bodyOf(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += (chunk as Buffer).toString('utf8');
  return text;
}

describe('svc releases:rollback, refused by the controller', () => {
  let server: Server;
  let url: string;
  const received: Array<{ method: string; path: string; body: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      void bodyOf(req).then((body) => {
        received.push({ method: req.method ?? '', path: req.url ?? '', body });
        const refused = req.method === 'POST' && req.url === '/v1/apps/myapp/releases/rollback/';
        res.writeHead(refused ? 409 : 404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ detail: refused ? REFUSAL : 'Not found.' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("prints the server's message on standard error, nothing on standard output, and exits 1", async () => {
    let out = '';
    let err = '';
    const sink = (append: (s: string) => void) =>
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          append(chunk.toString('utf8'));
          done();
        },
      });
    const io = { out: sink((s) => (out += s)), err: sink((s) => (err += s)), in: process.stdin };

    const code = await main(['node', 'svc', 'releases:rollback', 'v1', '-a', 'myapp'], io, { HOME: '/nonexistent', SVC_URL: url, SVC_TOKEN: 'a'.repeat(40) });

    expect({ code, out, err }).toEqual({ code: 1, out: '', err: `svc: ${REFUSAL}\n` });
    expect(received).toEqual([{ method: 'POST', path: '/v1/apps/myapp/releases/rollback/', body: JSON.stringify({ version: 1 }) }]);
  });
});
