import { loadConfig } from '../src/config';
import { appUrl, publicRouter } from '../src/public-addresses';

describe('APPS_URL_SCHEME and APPS_URL_PORT', () => {
  it('are unset by default: the router says', () => {
    expect(loadConfig({}).appsUrl).toEqual({ scheme: null, port: null });
  });

  it('take http or https and a port', () => {
    expect(loadConfig({ APPS_URL_SCHEME: 'HTTPS', APPS_URL_PORT: '443' }).appsUrl).toEqual({ scheme: 'https', port: 443 });
  });

  it('stop the start on another scheme or a port out of range, naming the variable', () => {
    expect(() => loadConfig({ APPS_URL_SCHEME: 'ftp' })).toThrow(/^APPS_URL_SCHEME: must be http or https/);
    expect(() => loadConfig({ APPS_URL_PORT: '0' })).toThrow(/^APPS_URL_PORT: must be an integer from 1 to 65535/);
    expect(() => loadConfig({ APPS_URL_PORT: '70000' })).toThrow(/^APPS_URL_PORT/);
  });
});

describe('publicRouter', () => {
  const unset = { scheme: null, port: null };

  it("is the router's plain HTTP listener by default, even beside an HTTPS one", () => {
    expect(publicRouter(unset, { http: 8080, https: null })).toEqual({ scheme: 'http', port: 8080 });
    expect(publicRouter(unset, { http: 8080, https: 8443 })).toEqual({ scheme: 'http', port: 8080 });
  });

  it('is the HTTPS listener when the router has no plain one', () => {
    expect(publicRouter(unset, { http: null, https: 8443 })).toEqual({ scheme: 'https', port: 8443 });
  });

  it('takes the port published in front of the router (APPS_URL_PORT) over the one it listens on', () => {
    expect(publicRouter({ scheme: null, port: 80 }, { http: 8080, https: null })).toEqual({ scheme: 'http', port: 80 });
  });

  it("takes the scheme of a proxy that ends TLS, on that scheme's listener or else its default port", () => {
    expect(publicRouter({ scheme: 'https', port: null }, { http: 8080, https: null })).toEqual({ scheme: 'https', port: 443 });
    expect(publicRouter({ scheme: 'https', port: null }, { http: 8080, https: 8443 })).toEqual({ scheme: 'https', port: 8443 });
    expect(publicRouter({ scheme: 'https', port: 9443 }, { http: 8080, https: null })).toEqual({ scheme: 'https', port: 9443 });
  });

  it('is null when no router listens here and nothing is set, and plain HTTP when only a port is', () => {
    expect(publicRouter(unset, { http: null, https: null })).toBeNull();
    expect(publicRouter({ scheme: null, port: 8080 }, { http: null, https: null })).toEqual({ scheme: 'http', port: 8080 });
  });
});

describe('appUrl', () => {
  it("names the port unless it is the scheme's default", () => {
    expect(appUrl('shop.localhost', { scheme: 'http', port: 8080 })).toBe('http://shop.localhost:8080');
    expect(appUrl('shop.example.com', { scheme: 'http', port: 80 })).toBe('http://shop.example.com');
    expect(appUrl('shop.example.com', { scheme: 'https', port: 443 })).toBe('https://shop.example.com');
    expect(appUrl('shop.example.com', { scheme: 'https', port: 80 })).toBe('https://shop.example.com:80');
  });
});
