import { LineBuffer, appLink, atBottom, canRollBackTo, certificateCovers, errorDetail, looksSecret, maskValue, parseProcfile, parseRoute, processCounts, shortSha } from '../src/format';

describe('looksSecret', () => {
  it.each(['DATABASE_PASSWORD', 'API_KEY', 'SESSION_SECRET', 'GITHUB_TOKEN', 'aws_secret_access_key', 'PRIVATE_KEY', 'SENTRY_DSN', 'SECRET'])('masks %s whatever its value', (key) => {
    expect(looksSecret(key, 'x')).toBe(true);
  });

  it.each(['GREETING', 'PORT', 'NODE_ENV', 'SVC_APP', 'WEB_CONCURRENCY'])('shows %s with a plain value', (key) => {
    expect(looksSecret(key, 'hello')).toBe(false);
  });

  it('masks a URL that carries a password, under any key', () => {
    expect(looksSecret('DATABASE_URL', 'postgres://app:pw@db:5432/app')).toBe(true);
    expect(looksSecret('DATABASE_URL', 'postgres://db:5432/app')).toBe(false);
  });
});

describe('maskValue', () => {
  it('hides the value and its exact length, and leaves an empty value empty', () => {
    expect(maskValue('ab')).toBe('••••••');
    expect(maskValue('a'.repeat(40))).toBe('•'.repeat(12));
    expect(maskValue('')).toBe('');
  });
});

describe('processCounts', () => {
  it('lists types by name with their counts, or none', () => {
    expect(processCounts({ worker: 1, web: 2 })).toBe('web 2 · worker 1');
    expect(processCounts({})).toBe('none');
  });
});

describe('errorDetail', () => {
  it('gives the detail, the non-field errors, the field errors, or a 1.0 bare string', () => {
    expect(errorDetail(404, { detail: 'Not found.' })).toBe('Not found.');
    expect(errorDetail(400, { non_field_errors: ['Unable to log in with provided credentials.'] })).toBe('Unable to log in with provided credentials.');
    expect(errorDetail(400, { domain: ['Hostname does not look valid: x'], id: ['This field is required.'] })).toBe('domain: Hostname does not look valid: x id: This field is required.');
    expect(errorDetail(400, 'version cannot be below 1')).toBe('version cannot be below 1');
  });

  it('names the status when the answer says nothing readable', () => {
    expect(errorDetail(502, '')).toBe('The controller answered 502 without saying why.');
    expect(errorDetail(500, null)).toBe('The controller answered 500 without saying why.');
  });
});

describe('parseProcfile', () => {
  it('reads one type: command a line, skipping blanks and comments', () => {
    expect(parseProcfile('# processes\nweb: node server.js --port $PORT\n\nworker:  node worker.js \n')).toEqual({ web: 'node server.js --port $PORT', worker: 'node worker.js' });
    expect(parseProcfile('')).toEqual({});
  });

  it('names the line that is not type: command', () => {
    expect(() => parseProcfile('web: ok\nnot a line')).toThrow('Procfile line 2 is not "type: command".');
  });
});

describe('LineBuffer', () => {
  it('gives whole lines, joining one cut between chunks, and what is left at the end', () => {
    const buffer = new LineBuffer();
    expect(buffer.push('one\ntw')).toEqual(['one']);
    expect(buffer.push('o\nthree')).toEqual(['two']);
    expect(buffer.push('')).toEqual([]);
    expect(buffer.flush()).toEqual(['three']);
    expect(buffer.flush()).toEqual([]);
  });
});

describe('atBottom', () => {
  it('is true at the bottom or within the slack, false when scrolled up', () => {
    expect(atBottom(700, 300, 1000)).toBe(true);
    expect(atBottom(695, 300, 1000)).toBe(true);
    expect(atBottom(400, 300, 1000)).toBe(false);
  });
});

describe('shortSha and parseRoute', () => {
  it('shortens a sha, shows a dash without one', () => {
    expect(shortSha('0123456789abcdef')).toBe('0123456');
    expect(shortSha('')).toBe('–');
  });

  it('reads the app route, and anything else as the apps list', () => {
    expect(parseRoute('#/apps/my-app')).toEqual({ page: 'app', app: 'my-app' });
    expect(parseRoute('#/apps/my-app/')).toEqual({ page: 'app', app: 'my-app' });
    expect(parseRoute('#/apps')).toEqual({ page: 'apps' });
    expect(parseRoute('#/apps/Bad_Id')).toEqual({ page: 'apps' });
    expect(parseRoute('')).toEqual({ page: 'apps' });
  });
});

describe('certificateCovers', () => {
  it('covers the same name and, with a wildcard, names one level below it', () => {
    expect(certificateCovers('shop.example.com', 'shop.example.com')).toBe(true);
    expect(certificateCovers('*.svc.test', 'myapp.svc.test')).toBe(true);
    expect(certificateCovers('*.SVC.test', 'MyApp.svc.test')).toBe(true);
  });

  it('does not cover another name, two levels below a wildcard, or the wildcard base itself', () => {
    expect(certificateCovers('shop.example.com', 'www.shop.example.com')).toBe(false);
    expect(certificateCovers('*.svc.test', 'a.b.svc.test')).toBe(false);
    expect(certificateCovers('*.svc.test', 'svc.test')).toBe(false);
    expect(certificateCovers('*.svc.test', 'evilsvc.test')).toBe(false);
  });
});

describe('appLink', () => {
  it("adds the router's scheme and port to the app's host", () => {
    expect(appLink('myapp.localhost', { scheme: 'http', port: 8080 })).toBe('http://myapp.localhost:8080/');
    expect(appLink('shop.apps.example.com', { scheme: 'https', port: 8443 })).toBe('https://shop.apps.example.com:8443/');
  });

  it("leaves out the scheme's default port, and only that one", () => {
    expect(appLink('shop.example.com', { scheme: 'http', port: 80 })).toBe('http://shop.example.com/');
    expect(appLink('shop.example.com', { scheme: 'https', port: 443 })).toBe('https://shop.example.com/');
    expect(appLink('shop.example.com', { scheme: 'http', port: 443 })).toBe('http://shop.example.com:443/');
    expect(appLink('shop.example.com', { scheme: 'https', port: 80 })).toBe('https://shop.example.com:80/');
  });
});

describe('canRollBackTo', () => {
  const built = { build: '8f2c1a52-95c5-4c36-bb1c-0e3f1b2b8a11' };
  const bare = { build: null };

  it('offers a release with a build, whatever the current one has', () => {
    expect(canRollBackTo(built, built)).toBe(true);
    expect(canRollBackTo(built, bare)).toBe(true);
  });

  it('offers a release without a build only while the current one has none either', () => {
    expect(canRollBackTo(bare, bare)).toBe(true);
    expect(canRollBackTo(bare, built)).toBe(false);
  });
});
