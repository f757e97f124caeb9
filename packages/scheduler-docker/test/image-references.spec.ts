import { containerUserFor } from '../src/container-user';
import { imageNamedBy, isImageIdReference, normalizedReference, refusalOf } from '../src/image-references';
import { assertPublicRegistry, isPrivateAddress, registryOf } from '../src/registry-hosts';

const image = (tags: string[], labels: Record<string, string> = {}, user = '') => ({ RepoTags: tags, RepoDigests: [], Config: { Labels: labels, User: user } }) as never;

describe('image references of tenants', () => {
  it('reads ids and id prefixes as ids', () => {
    for (const reference of ['sha256:0123456789ab', 'sha256:', '0123456789ab', 'ABCDEF012345', 'deadbeef', 'a']) expect(isImageIdReference(reference)).toBe(true);
    for (const reference of ['busybox', 'svc-test/busybox:1', 'registry.example/app@sha256:0123', 'abc:1']) expect(isImageIdReference(reference)).toBe(false);
  });

  it('matches a reference to the image names the engine lists', () => {
    expect(normalizedReference('docker.io/library/busybox')).toBe('busybox:latest');
    expect(normalizedReference('127.0.0.1:5000/app')).toBe('127.0.0.1:5000/app:latest');
    expect(imageNamedBy('busybox', image(['busybox:latest']))).toBe(true);
    expect(imageNamedBy('busybox:1', image(['busybox:latest']))).toBe(false);
  });

  it('refuses an image found by id, another app\'s, and a deleted app\'s under the same name', () => {
    expect(refusalOf('b', image(['busybox:latest']), 'a', null)).toMatch(/by its id/);
    expect(refusalOf('victim:3', image(['victim:3'], { 'svc.app': 'victim' }), 'thief', 'u1')).toMatch(/another app/);
    expect(refusalOf('same:3', image(['same:3'], { 'svc.app': 'same', 'svc.app-uuid': 'old' }), 'same', 'new')).toMatch(/another app/);
    expect(refusalOf('same:3', image(['same:3'], { 'svc.app': 'same', 'svc.app-uuid': 'u1' }), 'same', 'u1')).toBeNull();
    expect(refusalOf('busybox', image(['busybox:latest']), 'a', null)).toBeNull();
  });

  it('runs a platform-built image as its own non-root user, any other as the operator\'s', () => {
    expect(containerUserFor('65534:65534', image(['a:1'], { 'svc.app': 'a' }, '10000:10000'))).toBe('10000:10000');
    expect(containerUserFor('65534:65534', image(['a:1'], { 'svc.app': 'a' }, 'root'))).toBe('65534:65534');
    expect(containerUserFor('65534:65534', image(['a:1'], { 'svc.app': 'a' }, '0:0'))).toBe('65534:65534');
    expect(containerUserFor('65534:65534', image(['busybox:latest'], {}, '10000'))).toBe('65534:65534');
  });
});

describe('registries a pull may reach', () => {
  it('knows this host\'s and private ranges', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1']) {
      expect(isPrivateAddress(address)).toBe(true);
    }
    for (const address of ['203.0.113.80', '8.8.8.8', '2001:4860::1']) expect(isPrivateAddress(address)).toBe(false);
  });

  it('reads the registry of a reference as the engine does', () => {
    expect(registryOf('busybox')).toBe('docker.io');
    expect(registryOf('library/busybox')).toBe('docker.io');
    expect(registryOf('127.0.0.1:5000/x')).toBe('127.0.0.1:5000');
    expect(registryOf('localhost/x')).toBe('localhost');
    expect(registryOf('Registry.Example.COM/x:1')).toBe('registry.example.com');
  });

  it('refuses pulls from this host, link-local and private ranges, by address or by name', async () => {
    const resolve = async (host: string) => (host === 'inside.example' ? ['10.0.0.7'] : host === 'rebind.example' ? ['203.0.113.9', '127.0.0.1'] : ['203.0.113.9']);
    for (const reference of ['127.0.0.1:5000/x', '169.254.169.254/x', 'localhost:5000/x', '[::1]:5000/x', '10.0.0.1/x', 'inside.example/x', 'rebind.example/x', '2130706433:80/x']) {
      await expect(assertPublicRegistry(reference, [], resolve)).rejects.toThrow(/refused/);
    }
    await expect(assertPublicRegistry('public.example/x', [], resolve)).resolves.toBeUndefined();
    await expect(assertPublicRegistry('busybox', [], resolve)).resolves.toBeUndefined();
    await expect(assertPublicRegistry('127.0.0.1:5000/x', ['127.0.0.1:5000'], resolve)).resolves.toBeUndefined();
    await expect(assertPublicRegistry('inside.example/x', ['inside.example'], resolve)).resolves.toBeUndefined();
    await expect(assertPublicRegistry('127.0.0.1:5001/x', ['127.0.0.1:5000'], resolve)).rejects.toThrow(/refused/);
  });
});
