import { loadConfig } from '../src/config';
import { teardownEngine, teardownPlan } from '../src/teardown-engine';

describe('the teardown of an installation on its Docker engine', () => {
  it("removes the Docker scheduler's part and the build network with SCHEDULER=docker, named by their settings", () => {
    const config = loadConfig({ SCHEDULER: 'docker', DOCKER_INSTANCE: 'blue', DOCKER_NETWORK: 'blue-apps', DOCKER_BRIDGE: 'blue0', BUILDPACK_NETWORK: 'blue-build', BUILDPACK_BRIDGE: 'blueb0' });
    expect(teardownPlan(config)).toEqual({
      platform: true,
      builds: true,
      lines: ['the containers of instance blue, the network blue-apps and its iptables guard (bridge blue0)', 'the build network blue-build and its iptables guards (bridge blueb0)'],
    });
  });

  it('leaves the apps of a swarm alone (only its build network goes), and has nothing to remove with the process scheduler or without image builds', () => {
    expect(teardownPlan(loadConfig({ SCHEDULER: 'swarm', REGISTRY: '10.0.0.2:5000' }))).toMatchObject({ platform: false, builds: true });
    expect(teardownPlan(loadConfig({ SCHEDULER: 'docker', IMAGE_BUILDER: 'none' }))).toMatchObject({ platform: true, builds: false });
    expect(teardownPlan(loadConfig({ SCHEDULER: 'process' }))).toEqual({ platform: false, builds: false, lines: [] });
  });

  it('without --yes says what it would remove and asks no engine', async () => {
    const lines: string[] = [];
    // No engine answers there: a teardown that went on would fail.
    await teardownEngine(loadConfig({ SCHEDULER: 'docker', DOCKER_HOST: 'unix:///nonexistent/docker.sock' }), false, (line) => lines.push(line));
    expect(lines.join('\n')).toBe(
      [
        'Would remove, with the controller stopped:',
        '  - the containers of instance default, the network svc-apps and its iptables guard (bridge svc-apps0)',
        '  - the build network svc-build and its iptables guards (bridge svc-build0)',
        'Run again with --yes to remove them.',
      ].join('\n'),
    );
    await expect(teardownEngine(loadConfig({ SCHEDULER: 'docker', DOCKER_HOST: 'unix:///nonexistent/docker.sock' }), true, () => undefined)).rejects.toThrow(
      'no Docker engine answers at unix:///nonexistent/docker.sock',
    );
  });

  it('reads DOCKER_GUARDS (auto by default) and STACK_IMAGE as the helper image', () => {
    expect(loadConfig({}).docker).toMatchObject({ guards: 'auto', guardImage: 'localhost/svc-stack:latest' });
    expect(loadConfig({ DOCKER_GUARDS: 'engine', STACK_IMAGE: 'registry.example.com/stack:1' }).docker).toMatchObject({ guards: 'engine', guardImage: 'registry.example.com/stack:1' });
    expect(loadConfig({ SCHEDULER: 'docker', DOCKER_GUARDS: 'local' }).imageBuilds?.guards).toBe('local');
    expect(() => loadConfig({ DOCKER_GUARDS: 'sometimes' })).toThrow(/^DOCKER_GUARDS: must be one of auto, local, engine/);
  });
});
