import { FrameDemultiplexer, dockerHostOptions, nanoCpusForShares } from '../src';

function frame(type: number, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe('dockerHostOptions', () => {
  it('defaults to the engine socket of the Docker way', () => {
    expect(dockerHostOptions(undefined)).toEqual({ socketPath: '/var/run/docker.sock' });
    expect(dockerHostOptions('')).toEqual({ socketPath: '/var/run/docker.sock' });
  });

  it('reads unix sockets and tcp addresses', () => {
    expect(dockerHostOptions('unix:///run/podman/podman.sock')).toEqual({ socketPath: '/run/podman/podman.sock' });
    expect(dockerHostOptions('tcp://10.0.0.5:2375')).toEqual({ protocol: 'http', host: '10.0.0.5', port: 2375 });
    expect(dockerHostOptions('https://engine.example:2376')).toEqual({ protocol: 'https', host: 'engine.example', port: 2376 });
  });

  it('rejects what is not an engine address', () => {
    expect(() => dockerHostOptions('unix://relative.sock')).toThrow(/absolute socket path/);
    expect(() => dockerHostOptions('ssh://host')).toThrow(/DOCKER_HOST/);
    expect(() => dockerHostOptions('tcp://host')).toThrow(/DOCKER_HOST/);
  });
});

describe('FrameDemultiplexer', () => {
  it('splits frames across chunk boundaries by stream', () => {
    const seen: string[] = [];
    const demux = new FrameDemultiplexer((stream, payload) => seen.push(`${stream}:${payload.toString()}`));
    const bytes = Buffer.concat([frame(1, 'out one\n'), frame(2, 'err\n'), frame(1, 'out two')]);
    for (let at = 0; at < bytes.length; at += 3) demux.push(bytes.subarray(at, at + 3));
    expect(seen).toEqual(['stdout:out one\n', 'stderr:err\n', 'stdout:out two']);
  });

  it("keeps the engine's own errors in the stream (type 3) apart from the app's output", () => {
    const seen: string[] = [];
    const errors: string[] = [];
    const demux = new FrameDemultiplexer((stream, payload) => seen.push(`${stream}:${payload.toString()}`), (message) => errors.push(message));
    demux.push(Buffer.concat([frame(1, 'out\n'), frame(3, 'Error grabbing logs: node x is not available\n'), frame(2, 'err\n')]));
    expect(seen).toEqual(['stdout:out\n', 'stderr:err\n']);
    expect(errors).toEqual(['Error grabbing logs: node x is not available']);
    // Without a listener they are dropped, never taken for output.
    const quiet: string[] = [];
    new FrameDemultiplexer((stream, payload) => quiet.push(`${stream}:${payload.toString()}`)).push(frame(3, 'engine trouble\n'));
    expect(quiet).toEqual([]);
  });
});

describe('limits', () => {
  it('maps CPU shares to a CPU limit, 1024 being one CPU', () => {
    expect(nanoCpusForShares(1024)).toBe(1e9);
    expect(nanoCpusForShares(512)).toBe(5e8);
    expect(nanoCpusForShares(2048)).toBe(2e9);
    expect(nanoCpusForShares(1)).toBe(1e7);
    expect(nanoCpusForShares(0)).toBeNull();
    expect(nanoCpusForShares(null)).toBeNull();
  });
});
