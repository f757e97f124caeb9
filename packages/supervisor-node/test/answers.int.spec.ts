import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answersAt } from '@svc/supervisor-node';

const serve = (status: number, body: string): Promise<Server> =>
  new Promise((resolve) => {
    const server = createServer((_req, res) => {
      res.statusCode = status;
      res.end(`${body}\n`);
    });
    server.listen(0, '127.0.0.1', () => resolve(server));
  });

describe('answersAt', () => {
  it('gives the bodies of the endpoints that answer 200, and leaves out the others and the silent', async () => {
    const ok = await serve(200, 'v4 one');
    const failing = await serve(500, 'broken');
    const closed = await serve(200, 'gone');
    const port = (server: Server): number => (server.address() as AddressInfo).port;
    const closedPort = port(closed);
    await new Promise((resolve) => closed.close(resolve));
    try {
      const answers = await answersAt([
        { host: '127.0.0.1', port: port(ok) },
        { host: '127.0.0.1', port: port(failing) },
        { host: '127.0.0.1', port: closedPort },
      ]);
      expect(answers).toEqual(['v4 one']);
    } finally {
      await new Promise((resolve) => ok.close(resolve));
      await new Promise((resolve) => failing.close(resolve));
    }
  });
});
