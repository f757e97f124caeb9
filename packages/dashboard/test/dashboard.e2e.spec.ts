import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { sandboxUnavailable } from '../../scheduler-process/test/support/sandbox';
import { inlineNode, login, register, startTestServer, type TestServer } from '../../server/test/support';
import { CHROMIUM_PATH, describeInBrowser, eventually } from './browser';

/*
 * The dashboard in a real browser (Debian's Chromium driven by playwright-core) against a
 * real controller running real app processes (SCHEDULER=process). The app page's screenshot
 * is saved to artifacts/dashboard/ (CI keeps it); with UPDATE_DOCS_SCREENSHOTS=1 the
 * screenshots of docs/dashboard.md are written to docs/dashboard/ too.
 */

jest.setTimeout(150_000);

const ROOT = resolve(__dirname, '..', '..', '..');
const ARTIFACTS = join(ROOT, 'artifacts', 'dashboard');
const DOCS = join(ROOT, 'docs', 'dashboard');
const PASSWORD = 'alice-Secret1';

/** The app: serves PORT, says `request <path>` for each request, and `tick <n>` twice a second. */
const WEB = inlineNode(`
let n = 0;
require('http').createServer((req, res) => { console.log('request ' + req.url.slice(1)); res.end('ok'); })
  .listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
setInterval(() => console.log('tick ' + (++n)), 500);
`);

/** An app that answers each request with its own name, the path and the Host it was asked for. */
const HELLO = inlineNode(`
require('http').createServer((req, res) => { res.setHeader('Content-Type', 'text/plain'); res.end('hello from ' + process.env.SVC_APP + ' at ' + req.url + ' for ' + req.headers.host); })
  .listen(Number(process.env.PORT));
`);

/** What the router answers for a path of `<app>.localhost`. */
function viaRouter(port: number, app: string, path: string): Promise<number> {
  return new Promise((done) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { Host: `${app}.localhost` }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
    });
    req.on('error', () => done(0));
    req.end();
  });
}

/** The OpenAPI paths as patterns: `{id}` stands for one path segment, one trailing slash optional. */
function operationsOf(document: { paths: Record<string, Record<string, unknown>> }): Array<{ method: string; pattern: RegExp }> {
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => ({
      method: method.toUpperCase(),
      pattern: new RegExp(`^${path.replace(/\/$/, '').replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
    })),
  );
}

/** The scroll position of an element, as the page sees it. */
interface Box {
  scrollTop: number;
  clientHeight: number;
  scrollHeight: number;
}

async function screenshot(page: Page, name: string): Promise<void> {
  // From the top, where the sticky message line is in its place rather than over a heading.
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: join(ARTIFACTS, name), fullPage: true });
  if (process.env.UPDATE_DOCS_SCREENSHOTS === '1') await page.screenshot({ path: join(DOCS, name), fullPage: true });
}

/*
 * The app is this test's own code: where the apps' sandbox cannot be set up (not root, no
 * bubblewrap) it runs unconfined, so the browser test still runs; the sandbox has tests of its own.
 */
const SANDBOX: Record<string, string> = sandboxUnavailable() === null ? {} : { UNSAFE_SINGLE_USER_DEV: '1' };

describeInBrowser('the dashboard in Chromium, against a controller running apps as processes', () => {
  let server: TestServer;
  let browser: Browser;
  let dataDir: string;
  let dashboard: string;
  let aliceToken: string;
  const calls: string[] = [];
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-b', join(ROOT, 'packages', 'dashboard')], { stdio: 'pipe' });
    mkdirSync(ARTIFACTS, { recursive: true });
    if (process.env.UPDATE_DOCS_SCREENSHOTS === '1') mkdirSync(DOCS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'svc-dashboard-'));
    server = await startTestServer({ dataDir }, { SCHEDULER: 'process', PROCESS_PORT_RANGE: '47000-47999', PROCESS_STOP_TIMEOUT_SECONDS: '2', ...SANDBOX });
    await register(server.api, 'alice', PASSWORD);
    aliceToken = await login(server.api, 'alice', PASSWORD);
    dashboard = `${server.url}/dashboard/`;
    // Chromium's own sandbox refuses to start as root (CI runs as root); the pages are the test's.
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  /** A new page of a fresh browser context (its own session storage), recording its API calls and console errors. */
  async function newPage(width = 1280, height = 900): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    page.on('request', (req) => {
      const url = new URL(req.url());
      if (url.pathname.startsWith('/v1/')) calls.push(`${req.method()} ${url.pathname}`);
    });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    return page;
  }

  async function signIn(page: Page): Promise<void> {
    await page.goto(dashboard);
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Apps' }).waitFor();
  }

  const release = (page: Page, version: number) => page.locator('ol.timeline > li').filter({ has: page.locator('.version', { hasText: new RegExp(`^v${version}$`) }) });

  it('is served at /dashboard/ with a strict Content-Security-Policy and sets no cookie', async () => {
    const page = await newPage();
    const response = await page.goto(dashboard);
    const csp = response?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(response?.headers()['set-cookie']).toBeUndefined();
    await page.context().close();
  });

  it('signs in, creates an app, deploys, rolls back, scales, sets and unsets config, shows errors and live logs, signs out', async () => {
    const page = await newPage();
    await signIn(page);
    expect(await page.context().cookies()).toEqual([]);

    // Create the app: its page opens.
    await page.getByLabel(/^App name/).fill('webapp');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('heading', { level: 1, name: 'webapp' }).waitFor();
    await release(page, 1).filter({ hasText: 'alice created initial release' }).waitFor();

    // Deploy a build: v2, current, in the timeline; the web process comes up.
    await page.getByLabel('Image', { exact: true }).fill('example/web:1');
    await page.getByLabel(/^Procfile/).fill(`web: ${WEB}`);
    await page.getByRole('button', { name: 'Deploy' }).click();
    await release(page, 2).filter({ hasText: 'alice deployed example/web:1' }).waitFor({ timeout: 30_000 });
    expect(await release(page, 2).getAttribute('aria-current')).toBe('true');
    expect(await release(page, 2).getByRole('button').count()).toBe(0);
    await page.locator('#builds').getByText('example/web:1', { exact: true }).waitFor();
    await page.getByRole('list', { name: 'web containers' }).getByText('up').waitFor({ timeout: 30_000 });

    // A line the app writes reaches the Logs panel within 2 s.
    const logs = page.getByRole('log', { name: 'Logs' });
    await logs.getByText(/listening on \d+/).waitFor({ timeout: 15_000 });
    await eventually(async () => expect(await viaRouter(server.routerPort as number, 'webapp', '/warm-up')).toBe(200));
    const marker = `marker-${Date.now()}`;
    const sent = Date.now();
    expect(await viaRouter(server.routerPort as number, 'webapp', `/${marker}`)).toBe(200);
    await logs.getByText(`request ${marker}`).waitFor({ timeout: 2_000 });
    expect(Date.now() - sent).toBeLessThan(2_000);

    // Streaming lines neither moves the page nor the panel; scrolling up pauses, the button resumes.
    const before = await page.locator('#config').boundingBox();
    const panel = await logs.boundingBox();
    const lineCount = await logs.locator('.line').count();
    await eventually(async () => expect(await logs.locator('.line').count()).toBeGreaterThan(lineCount + 2));
    expect(await page.locator('#config').boundingBox()).toEqual(before);
    expect(await logs.boundingBox()).toEqual(panel);
    await eventually(async () => expect(await logs.evaluate((box: Box) => box.scrollHeight - box.clientHeight)).toBeGreaterThan(100), 20_000);
    await logs.evaluate((box: Box) => {
      box.scrollTop = 0;
    });
    await page.getByText(/^Paused: \d+ new lines? below\.$/).waitFor();
    await eventually(async () => expect(await page.getByText(/^Paused: ([3-9]|\d\d+) new lines below\.$/).count()).toBe(1));
    expect(await logs.evaluate((box: Box) => box.scrollTop)).toBe(0);
    await page.getByRole('button', { name: 'Follow new lines' }).click();
    await eventually(async () => expect(await logs.evaluate((box: Box) => box.scrollTop + box.clientHeight >= box.scrollHeight - 8)).toBe(true));
    // Following again, arriving lines keep it following.
    const resumedAt = await logs.locator('.line').count();
    await eventually(async () => expect(await logs.locator('.line').count()).toBeGreaterThan(resumedAt + 4));
    expect(await page.locator('.log-state').textContent()).toBe('Following.');

    // Config: set (v3), a secret masked until revealed (v4), unset (v5).
    await page.getByLabel('Key', { exact: true }).fill('GREETING');
    await page.getByLabel('Value', { exact: true }).fill('hello');
    await page.getByRole('button', { name: 'Set', exact: true }).click();
    await release(page, 3).filter({ hasText: 'alice added GREETING' }).waitFor({ timeout: 30_000 });
    const configTable = page.locator('#config-table');
    await configTable.getByRole('row', { name: /GREETING hello/ }).waitFor();
    await page.getByLabel('Key', { exact: true }).fill('API_TOKEN');
    await page.getByLabel('Value', { exact: true }).fill('tok-very-secret');
    await page.getByRole('button', { name: 'Set', exact: true }).click();
    await release(page, 4).waitFor({ timeout: 30_000 });
    const secretRow = configTable.getByRole('row', { name: /API_TOKEN/ });
    await secretRow.waitFor();
    expect(await secretRow.textContent()).not.toContain('tok-very-secret');
    await page.getByRole('button', { name: 'Reveal API_TOKEN' }).click();
    await configTable.getByRole('row', { name: /API_TOKEN tok-very-secret/ }).waitFor();
    await page.getByRole('button', { name: 'Unset GREETING' }).click();
    await release(page, 5).filter({ hasText: 'alice deleted GREETING' }).waitFor({ timeout: 30_000 });
    expect(await configTable.getByRole('row', { name: /GREETING/ }).count()).toBe(0);

    // Roll back to v3: v6 is current with v3's config (GREETING back, no API_TOKEN).
    await page.getByRole('button', { name: 'Roll back to v3' }).click();
    await release(page, 6).filter({ hasText: 'alice rolled back to v3' }).waitFor({ timeout: 30_000 });
    expect(await release(page, 6).getAttribute('aria-current')).toBe('true');
    await page.getByRole('status').filter({ hasText: 'Rolled back to v3: the current release is now v6.' }).waitFor();
    await configTable.getByRole('row', { name: /GREETING hello/ }).waitFor();
    expect(await configTable.getByRole('row', { name: /API_TOKEN/ }).count()).toBe(0);

    // Scale web to 2: two containers up.
    await page.getByLabel('Number of web processes').fill('2');
    await page.getByRole('button', { name: 'Scale web' }).click();
    const containers = page.getByRole('list', { name: 'web containers' });
    await containers.getByText('web.2').waitFor({ timeout: 30_000 });
    await eventually(async () => expect(await containers.getByText('up', { exact: true }).count()).toBe(2), 30_000);

    await screenshot(page, 'app-page.png');

    // An API error is shown with its detail.
    await page.getByRole('textbox', { name: 'Domain to add' }).fill('nodot');
    await page.getByRole('form', { name: 'Add a domain' }).getByRole('button', { name: 'Add' }).click();
    await page.getByRole('alert').filter({ hasText: 'domain: Hostname does not look valid: nodot' }).waitFor();


    // The apps list: the app is a link named by its id, with its URL, owner and process counts.
    await page.getByRole('link', { name: 'Apps', exact: true }).click();
    const row = page.getByRole('row', { name: /webapp/ });
    await row.getByRole('link', { name: 'webapp', exact: true }).waitFor();
    expect(await row.textContent()).toContain('webapp.');
    expect(await row.textContent()).toContain('alice');
    expect(await row.textContent()).toContain('web 2');
    await screenshot(page, 'apps.png');
    // Queried as a person would, the app's page link, its URL's link and the Logs panel are each one thing on their page.
    expect(await page.getByRole('link', { name: 'webapp', exact: true }).count()).toBe(1);
    expect(await page.getByRole('link', { name: `http://webapp.localhost:${server.routerPort}/`, exact: true }).count()).toBe(1);

    // Delete an app: the button waits for the app's id to be typed.
    await page.getByLabel(/^App name/).fill('scratch');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('heading', { level: 1, name: 'scratch' }).waitFor();
    expect(await page.getByLabel('Logs').count()).toBe(1);
    const remove = page.getByRole('button', { name: 'Delete app' });
    expect(await remove.isDisabled()).toBe(true);
    await page.getByLabel(/^Type scratch to delete/).fill('scratc');
    expect(await remove.isDisabled()).toBe(true);
    await page.getByLabel(/^Type scratch to delete/).fill('scratch');
    await remove.click();
    await page.getByRole('heading', { level: 1, name: 'Apps' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Deleted scratch.' }).waitFor();
    await page.getByRole('link', { name: 'webapp', exact: true }).waitFor();
    expect(await page.getByRole('link', { name: 'scratch' }).count()).toBe(0);
    expect((await server.api.as(aliceToken).get('/v1/apps/scratch/')).status).toBe(404);

    // Sign out: back to the form, the token forgotten.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await screenshot(page, 'sign-in.png');
    await page.reload();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    await page.context().close();
  });

  it('is usable with the keyboard alone: sign in, open the app by its link, roll back', async () => {
    const page = await newPage();
    await page.goto(dashboard);
    // The sign-in form takes focus: type, Tab, type, Enter. A wrong password shows the API's
    // answer and leaves the password selected, to be typed again.
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    await page.keyboard.type('not-the-password');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'Unable to log in with provided credentials.' }).waitFor();
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Apps' }).waitFor();
    await page.getByRole('link', { name: 'webapp', exact: true }).waitFor();

    const tabTo = async (name: RegExp): Promise<string> => {
      for (let i = 0; i < 60; i += 1) {
        await page.keyboard.press('Tab');
        const text = (await page.locator(':focus').textContent()) ?? '';
        if (name.test(text.trim())) return text.trim();
      }
      throw new Error(`Tab never reached ${name}`);
    };
    await tabTo(/^webapp$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'webapp' }).waitFor();
    await release(page, 6).waitFor();
    const label = await tabTo(/^Roll back to v\d+$/);
    const target = Number(/v(\d+)$/.exec(label)?.[1]);
    await page.keyboard.press('Enter');
    await release(page, 7).filter({ hasText: `alice rolled back to v${target}` }).waitFor({ timeout: 30_000 });
    // Focus stays on the page (the control drawn again, or its section), so Tab goes on from there.
    expect(await page.locator(':focus').count()).toBe(1);
    expect(await page.locator('#releases :focus').count()).toBe(1);
    await page.context().close();
  });

  it('fits a 375 px wide screen without sideways scrolling, and shows the API error for an app that is not there', async () => {
    const page = await newPage(375, 812);
    await signIn(page);
    // An app that is not there (or not yours): the API's detail, not a blank page.
    await page.goto(`${dashboard}#/apps/nosuchapp`);
    await page.getByRole('alert').filter({ hasText: 'Not found.' }).waitFor();
    await page.getByText('This app could not be loaded.').waitFor();
    await page.getByRole('link', { name: 'Apps', exact: true }).click();
    await page.getByRole('link', { name: 'webapp', exact: true }).click();
    await release(page, 7).waitFor();
    await page.getByRole('log', { name: 'Logs' }).getByText(/tick \d+/).first().waitFor({ timeout: 15_000 });
    // Two processes' lines, wrapped on two rows each, arriving together: still following.
    const lines = page.getByRole('log', { name: 'Logs' }).locator('.line');
    const seen = await lines.count();
    await eventually(async () => expect(await lines.count()).toBeGreaterThan(seen + 6));
    expect(await page.locator('.log-state').textContent()).toBe('Following.');
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    const panel = await page.getByRole('log', { name: 'Logs' }).boundingBox();
    expect(panel?.width).toBeLessThanOrEqual(375);
    await screenshot(page, 'app-page-375.png');
    await page.context().close();
  });

  it("links each app to its URL on the router (scheme, host and port), in the apps list and on its page, and the link reaches the app", async () => {
    const alice = server.api.as(aliceToken);
    expect((await alice.post('/v1/apps/', { id: 'linked' })).status).toBe(201);
    expect((await alice.post('/v1/apps/linked/builds/', { image: 'example/hello:1', procfile: { web: HELLO } })).status).toBe(201);
    await eventually(async () => expect(await viaRouter(server.routerPort as number, 'linked', '/')).toBe(200), 30_000);
    const address = `http://linked.localhost:${server.routerPort}/`;
    // The router's port is any free one here: the link can only be right if it comes from the controller's answer.
    expect(server.routerPort).not.toBe(8080);
    const answer = `hello from linked at / for linked.localhost:${server.routerPort}`;

    /** Follows a link that opens a new tab, and returns what the page there shows. */
    const follow = async (page: Page, link: Locator): Promise<string> => {
      const [opened] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
      await opened.waitForLoadState();
      const text = (await opened.locator('body').textContent()) ?? '';
      await opened.close();
      return text;
    };

    const page = await newPage();
    await signIn(page);
    const row = page.getByRole('row', { name: /^linked / });
    const listed = row.getByRole('link', { name: address, exact: true });
    await listed.waitFor();
    expect(await listed.getAttribute('href')).toBe(address);
    expect(await follow(page, listed)).toBe(answer);

    await row.getByRole('link', { name: 'linked', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'linked' }).waitFor();
    const own = page.locator('.app-summary').getByRole('link', { name: address, exact: true });
    await own.waitFor();
    expect(await follow(page, own)).toBe(answer);
    await page.getByText(`No custom domain: the app answers at ${address}.`).waitFor();
    await page.context().close();
  });

  it('offers no rollback to a release without a build once the app runs a build, and shows the API refusing one', async () => {
    const alice = server.api.as(aliceToken);
    expect((await alice.post('/v1/apps/', { id: 'bare' })).status).toBe(201);
    expect((await alice.post('/v1/apps/bare/config/', { values: { GREETING: 'hi' } })).status).toBe(201);
    const page = await newPage();
    await signIn(page);
    await page.goto(`${dashboard}#/apps/bare`);
    await release(page, 2).waitFor();
    // No build yet: rolling back among build-less releases is offered.
    const stale = release(page, 1).getByRole('button', { name: 'Roll back to v1' });
    await stale.waitFor();

    // A build arrives (v3) while the page still shows v1's button: the API refuses it, and says why.
    expect((await alice.post('/v1/apps/bare/builds/', { image: 'example/worker:1', procfile: { worker: inlineNode('setInterval(() => undefined, 1000)') } })).status).toBe(201);
    await stale.click();
    await page.getByRole('alert').filter({ hasText: /^Release v1 has no build: rolling back to it would stop every process of bare\./ }).waitFor();
    expect((await alice.get<{ results: Array<{ version: number }> }>('/v1/apps/bare/releases/')).body.results[0]?.version).toBe(3);

    // Drawn again: only releases with a build are offered (none but the current one yet), then v3 once v4 is current.
    await page.getByRole('button', { name: 'Refresh' }).click();
    await release(page, 3).and(page.locator('[aria-current="true"]')).waitFor();
    expect(await page.locator('#releases').getByRole('button', { name: /^Roll back to/ }).count()).toBe(0);
    await page.getByLabel('Key', { exact: true }).fill('GREETING');
    await page.getByLabel('Value', { exact: true }).fill('hello');
    await page.getByRole('button', { name: 'Set', exact: true }).click();
    await release(page, 4).and(page.locator('[aria-current="true"]')).waitFor({ timeout: 30_000 });
    const offered = await page.locator('#releases').getByRole('button', { name: /^Roll back to/ }).allTextContents();
    expect(offered).toEqual(['Roll back to v3']);
    await page.context().close();
  });

  it('made only calls of the public API (every one in the OpenAPI document), with no script error or CSP violation', async () => {
    const document = (await server.api.get<{ paths: Record<string, Record<string, unknown>> }>('/v1/openapi.json')).body;
    const operations = operationsOf(document);
    const unknown = [...new Set(calls)].filter((call) => {
      const [method, path] = call.split(' ') as [string, string];
      return !operations.some((op) => op.method === method && op.pattern.test(path));
    });
    expect(calls.length).toBeGreaterThan(20);
    expect(unknown).toEqual([]);
    // No script error and no CSP violation; failed loads (the refused domain's 400, a stream
    // cut when another process changes this machine's network) are the API's to report.
    expect(consoleErrors.filter((text) => !text.startsWith('Failed to load resource:'))).toEqual([]);
  });
});
