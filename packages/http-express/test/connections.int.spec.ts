import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { limitConnections } from '../src';

/*
 * The API's connection caps against many client addresses: 127.0.0.0/8 gives each client an
 * address of its own (127.0.0.10 … 127.0.0.49 for the flood, 127.0.0.2 for a newcomer).
 */

const FLOOD = Array.from({ length: 40 }, (_, i) => `127.0.0.${10 + i}`);

interface Limited {
  server: Server;
  port: number;
  refusals: Array<[string, string]>;
}

async function limitedServer(limits: { maxConnections: number; maxConnectionsPerAddress: number; reservedConnections: number }): Promise<Limited> {
  const server = createServer((_req, res) => {
    res.setHeader('Content-Type', 'application/json');
    res.end('{"ok":true}');
  });
  const refusals: Array<[string, string]> = [];
  limitConnections(server, limits, (reason, address) => refusals.push([reason, address]));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, port: (server.address() as AddressInfo).port, refusals };
}

/** An idle connection from `localAddress`, once connected. */
function idle(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    socket.resume();
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve(socket));
  });
}

/** One GET from `localAddress` on a fresh connection: its status and body. */
function get(port: number, localAddress: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', localAddress, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Every flood address opens as many idle connections as it may; resolves with them and how many the server admitted. */
async function flood(limited: Limited, perAddress: number): Promise<{ held: Socket[]; admitted: number }> {
  const held: Socket[] = [];
  for (const address of FLOOD) {
    for (let n = 0; n < perAddress; n++) held.push(await idle(limited.port, address));
  }
  // The server has seen every connection by now; each it refused was reported.
  await new Promise((resolve) => setTimeout(resolve, 200));
  return { held, admitted: held.length - limited.refusals.length };
}

describe('API connection caps against many addresses', () => {
  jest.setTimeout(60_000);
  const opened: Limited[] = [];
  const sockets: Socket[] = [];

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    for (const limited of opened.splice(0)) {
      limited.server.closeAllConnections();
      await new Promise<void>((resolve) => limited.server.close(() => resolve()));
    }
  });

  it('40 addresses each at their cap cannot take the server: the reserved places go one per address, and a newcomer is served', async () => {
    const limited = await limitedServer({ maxConnections: 100, maxConnectionsPerAddress: 10, reservedConnections: 60 });
    opened.push(limited);

    const { held, admitted } = await flood(limited, 10);
    sockets.push(...held);

    // Four addresses fill the 40 shared places; each of the 36 others gets one reserved place.
    expect(admitted).toBe(40 + 36);
    expect(limited.refusals.filter(([reason]) => reason === 'total').length).toBeGreaterThan(0);
    expect(await get(limited.port, '127.0.0.2')).toEqual({ status: 200, body: '{"ok":true}' });
    // An address of the flood that holds a reserved place asking for another is refused with the total's 503.
    const more = await get(limited.port, '127.0.0.49');
    expect(more.status).toBe(503);
    expect(JSON.parse(more.body)).toEqual({ detail: 'Too many connections: try again later.' });
  });

  it('without a reserve, the same 40 addresses take every place and the newcomer is refused (what the reserve prevents)', async () => {
    const limited = await limitedServer({ maxConnections: 100, maxConnectionsPerAddress: 10, reservedConnections: 0 });
    opened.push(limited);

    const { held, admitted } = await flood(limited, 10);
    sockets.push(...held);

    expect(admitted).toBe(100);
    expect((await get(limited.port, '127.0.0.2')).status).toBe(503);
  });

  it('one address past its own cap is answered 429 while the others are served', async () => {
    const limited = await limitedServer({ maxConnections: 100, maxConnectionsPerAddress: 3, reservedConnections: 50 });
    opened.push(limited);
    for (let n = 0; n < 3; n++) sockets.push(await idle(limited.port, '127.0.0.3'));

    const refused = await get(limited.port, '127.0.0.3');

    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toEqual({ detail: 'Too many connections from your address.' });
    expect((await get(limited.port, '127.0.0.4')).status).toBe(200);
  });
});
