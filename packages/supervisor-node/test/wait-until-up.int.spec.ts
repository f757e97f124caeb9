import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readinessCheck } from '@svc/core';
import { acceptsConnections, httpStatus, waitUntilUp, sleep, type UpWait } from '@svc/supervisor-node';

async function listen(host: string, status: number): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => {
    res.statusCode = status;
    res.end('ok');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  return { server, port: (server.address() as AddressInfo).port };
}

const close = (server: Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()));

function wait(check: UpWait['check'], overrides: Partial<UpWait> = {}): UpWait {
  return { check, settleMs: 50, timeoutMs: 500, probeIntervalMs: 20, failed: async () => null, pause: sleep, lastOutput: () => '', ...overrides };
}

describe('readiness probes on real sockets', () => {
  it('reach a server on 127.0.0.1 and on ::1 (an IPv6 health-check URL in brackets)', async () => {
    for (const host of ['127.0.0.1', '::1']) {
      const { server, port } = await listen(host, 204);
      try {
        expect(await acceptsConnections(host, port, 1000)).toBe(true);
        const check = readinessCheck('web', { HEALTHCHECK_URL: '/health' }, host, port);
        expect(check.kind).toBe('http');
        if (check.kind === 'http') expect(await httpStatus(check.url, 1000)).toBe(204);
        await expect(waitUntilUp(wait(check))).resolves.toBeUndefined();
        await expect(waitUntilUp(wait(readinessCheck('web', {}, host, port)))).resolves.toBeUndefined();
      } finally {
        await close(server);
      }
    }
  });

  it('fails at the deadline with the last answer and the last output', async () => {
    const { server, port } = await listen('127.0.0.1', 503);
    try {
      const check = readinessCheck('web', { HEALTHCHECK_URL: '/ready' }, '127.0.0.1', port);
      await expect(waitUntilUp(wait(check, { timeoutMs: 300, lastOutput: () => '; last output: booting' }))).rejects.toThrow(
        'HEALTHCHECK_URL /ready did not answer 2xx within 0.3 s (last: status 503); last output: booting',
      );
    } finally {
      await close(server);
    }
    expect(await acceptsConnections('127.0.0.1', port, 500)).toBe(false);
    await expect(waitUntilUp(wait(readinessCheck('web', {}, '127.0.0.1', port), { timeoutMs: 200 }))).rejects.toThrow(
      `it did not accept connections on port ${port} within 0.2 s`,
    );
  });

  it('reports the failure the scheduler sees rather than waiting, and lets another type settle', async () => {
    const exited = new Error('it exited with code 1 before it was up');
    await expect(waitUntilUp(wait({ kind: 'tcp', host: '127.0.0.1', port: 1 }, { failed: async () => exited }))).rejects.toBe(exited);
    const paused: number[] = [];
    await waitUntilUp(wait({ kind: 'settle' }, { settleMs: 70, pause: async (ms) => void paused.push(ms) }));
    expect(paused).toEqual([70]);
    await expect(waitUntilUp(wait({ kind: 'settle' }, { failed: async () => exited }))).rejects.toBe(exited);
  });
});
