import { authFor, registryHostOf } from '../src/registry-login';

describe('registry login', () => {
  const login = { registry: 'registry.example.com:5000/platform', username: 'svc', password: 's3cret' };

  it('reads the registry host of an image reference, or null for Docker Hub', () => {
    expect(registryHostOf('registry.example.com:5000/platform/app@sha256:00')).toBe('registry.example.com:5000');
    expect(registryHostOf('Registry.Example.com/app:1')).toBe('registry.example.com');
    expect(registryHostOf('localhost/app')).toBe('localhost');
    expect(registryHostOf('[fd00::1]:5000/app')).toBe('[fd00::1]:5000');
    expect(registryHostOf('library/busybox:1')).toBeNull();
    expect(registryHostOf('busybox')).toBeNull();
  });

  it('gives the login with images of its registry only, so no other registry sees the password', () => {
    expect(authFor(login, 'registry.example.com:5000/platform/hello@sha256:ab')).toEqual({ username: 'svc', password: 's3cret', serveraddress: 'registry.example.com:5000' });
    expect(authFor(login, 'registry.example.com:5000/other/image:1')).toEqual(expect.objectContaining({ username: 'svc' }));
    for (const image of ['registry.example.com/platform/hello:1', 'registry.example.com:5001/platform/hello:1', 'evil.example.com/registry.example.com:5000/x', 'busybox', 'library/registry.example.com:5000']) {
      expect({ image, auth: authFor(login, image) }).toEqual({ image, auth: undefined });
    }
    expect(authFor(null, 'registry.example.com:5000/platform/hello:1')).toBeUndefined();
  });
});
