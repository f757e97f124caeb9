import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Debian's pebble, or the binary TEST_PEBBLE names. */
export const PEBBLE_BINARY = process.env.TEST_PEBBLE?.trim() || '/usr/bin/pebble';

/** A pebble ACME server of one test file. */
export interface Pebble {
  /** `https://127.0.0.1:<port>/dir` */
  readonly directory: string;
  /** The CA that signed pebble's own HTTPS certificate: what a client of the ACME API trusts. */
  readonly apiCa: string;
  /** The root of the certificates pebble issues (from its management endpoint `/roots/0`). */
  readonly issuingRoot: () => Promise<string>;
  /** Everything pebble wrote, for a failing test's message. */
  readonly output: () => string;
  close(): Promise<void>;
}

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A GET over HTTPS trusting only `ca`; the body as text. */
export function fetchText(url: string, ca: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { ca, agent: false, timeout: 5000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** A CA and a certificate for 127.0.0.1 it signs, made with openssl, for pebble's own HTTPS. */
function apiCertificates(dir: string): void {
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=pebble test api CA');
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'key.pem', '-out', 'api.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('x509', '-req', '-in', 'api.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'cert.pem', '-days', '2', '-extfile', 'ext.cnf');
}

/**
 * Starts pebble with its test CA on free ports of 127.0.0.1: HTTP-01 validated on
 * `httpPort` (the router's), names resolved through `dnsServer`. Validation is real
 * (PEBBLE_VA_ALWAYS_VALID is never set); only pebble's random sleeps and nonce rejections
 * are turned off, so that tests are quick and deterministic.
 */
export async function startPebble(options: { httpPort: number; dnsServer: string }): Promise<Pebble> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-pebble-'));
  apiCertificates(dir);
  const [listen, management, tls] = [await freePort(), await freePort(), await freePort()];
  const config = {
    pebble: {
      listenAddress: `127.0.0.1:${listen}`,
      managementListenAddress: `127.0.0.1:${management}`,
      certificate: join(dir, 'cert.pem'),
      privateKey: join(dir, 'key.pem'),
      httpPort: options.httpPort,
      tlsPort: tls,
      ocspResponderURL: '',
      externalAccountBindingRequired: false,
    },
  };
  writeFileSync(join(dir, 'pebble-config.json'), JSON.stringify(config));
  let output = '';
  const child: ChildProcess = spawn(PEBBLE_BINARY, ['-config', join(dir, 'pebble-config.json'), '-dnsserver', options.dnsServer], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const apiCa = readFileSync(join(dir, 'ca.pem'), 'utf8');
  const directory = `https://127.0.0.1:${listen}/dir`;
  const close = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i += 1) {
    try {
      if ((await fetchText(directory, apiCa)).status === 200) break;
    } catch {
      // Not listening yet.
    }
    if (i > 100 || child.exitCode !== null) {
      await close();
      throw new Error(`pebble did not start: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    directory,
    apiCa,
    issuingRoot: async () => (await fetchText(`https://127.0.0.1:${management}/roots/0`, apiCa)).text,
    output: () => output,
    close,
  };
}

/**
 * Declares the suite when pebble is installed; under CI=true a missing pebble is a failing
 * test (`.ci/run` installs it), elsewhere the suite is skipped with one line saying why.
 */
export function describeWithPebble(title: string, body: () => void): void {
  if (existsSync(PEBBLE_BINARY)) {
    describe(title, body);
  } else if (process.env.CI === 'true') {
    describe(title, () => {
      it(`needs pebble at ${PEBBLE_BINARY} (apt-get install pebble; .ci/run installs it)`, () => {
        throw new Error(`pebble is not installed at ${PEBBLE_BINARY} under CI=true`);
      });
    });
  } else {
    process.stdout.write(`${title}: not run, pebble is not installed at ${PEBBLE_BINARY} (apt-get install pebble, or set TEST_PEBBLE).\n`);
    describe.skip(`${title} (skipped: no pebble)`, body);
  }
}
