import { cgroupWrites, cpuQuotaMicros, detectCgroups, parseOomKills } from '../src/cgroups';
import { restoreInput, squatterRules } from '../src/egress';
import { userNamespaceFilter } from '../src/seccomp';
import { listenersOn } from '../src/squatters';

describe('cgroup limits (pure)', () => {
  it('turns CPU shares into a quota per 100 ms period: 1024 is one CPU, none for null or 0', () => {
    expect(cpuQuotaMicros(1024)).toBe(100_000);
    expect(cpuQuotaMicros(256)).toBe(25_000);
    expect(cpuQuotaMicros(2048)).toBe(200_000);
    expect(cpuQuotaMicros(1)).toBe(1000);
    expect(cpuQuotaMicros(null)).toBeNull();
    expect(cpuQuotaMicros(0)).toBeNull();
  });

  it('writes v1 limits per controller, the swap limit after the memory limit', () => {
    expect(cgroupWrites(1, { memoryBytes: 1024 ** 3, cpuShares: 512, pids: 64 })).toEqual([
      { controller: 'memory', file: 'memory.limit_in_bytes', value: '1073741824' },
      { controller: 'memory', file: 'memory.memsw.limit_in_bytes', value: '1073741824' },
      { controller: 'cpu', file: 'cpu.cfs_period_us', value: '100000' },
      { controller: 'cpu', file: 'cpu.cfs_quota_us', value: '50000' },
      { controller: 'pids', file: 'pids.max', value: '64' },
    ]);
    expect(cgroupWrites(1, { memoryBytes: null, cpuShares: null, pids: 16 })).toEqual([
      { controller: 'cpu', file: 'cpu.cfs_period_us', value: '100000' },
      { controller: 'cpu', file: 'cpu.cfs_quota_us', value: '-1' },
      { controller: 'pids', file: 'pids.max', value: '16' },
    ]);
  });

  it('writes v2 limits in one directory, no swap, the whole cgroup killed on out of memory', () => {
    expect(cgroupWrites(2, { memoryBytes: 512 * 1024 ** 2, cpuShares: 1024, pids: 512 })).toEqual([
      { controller: '', file: 'memory.max', value: '536870912' },
      { controller: '', file: 'memory.swap.max', value: '0' },
      { controller: '', file: 'memory.oom.group', value: '1' },
      { controller: '', file: 'cpu.max', value: '100000 100000' },
      { controller: '', file: 'pids.max', value: '512' },
    ]);
    expect(cgroupWrites(2, { memoryBytes: null, cpuShares: null, pids: 8 }).find((w) => w.file === 'cpu.max')?.value).toBe('max 100000');
  });

  it('reads the out-of-memory kills of v1 memory.oom_control and v2 memory.events', () => {
    expect(parseOomKills('oom_kill_disable 0\nunder_oom 0\noom_kill 3\n')).toBe(3);
    expect(parseOomKills('low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 1\n')).toBe(1);
    expect(parseOomKills('')).toBe(0);
  });

  it('finds no usable hierarchy where nothing is mounted', () => {
    expect(detectCgroups('/nonexistent')).toEqual({ problem: 'no cgroup hierarchy with the controllers memory, cpu, pids is mounted under /nonexistent' });
  });
});

describe('userNamespaceFilter', () => {
  const instructions = (buffer: Buffer): Array<[number, number, number, number]> =>
    Array.from({ length: buffer.length / 8 }, (_, i) => [buffer.readUInt16LE(i * 8), buffer.readUInt8(i * 8 + 2), buffer.readUInt8(i * 8 + 3), buffer.readUInt32LE(i * 8 + 4)]);

  it('checks the architecture, then refuses unshare and clone with CLONE_NEWUSER and clone3, on x86-64', () => {
    const program = instructions(userNamespaceFilter('x64') as Buffer);
    expect(program).toHaveLength(13);
    expect(program[1]).toEqual([0x15, 0, 9, 0xc000003e]);
    expect(program[4]![3]).toBe(435);
    expect(program[5]![3]).toBe(272);
    expect(program[6]![3]).toBe(56);
    expect(program[9]).toEqual([0x45, 1, 0, 0x10000000]);
    expect(program[11]).toEqual([0x06, 0, 0, 0x00050001]);
    expect(program[12]).toEqual([0x06, 0, 0, 0x00050026]);
    // Every jump lands inside the program.
    program.forEach(([code, jt, jf], index) => {
      if ((code & 0x07) === 0x05) expect(index + 1 + Math.max(jt, jf)).toBeLessThan(program.length);
    });
  });

  it('knows arm64 by its own numbers, and no other architecture', () => {
    const program = instructions(userNamespaceFilter('arm64') as Buffer);
    expect(program[1]![3]).toBe(0xc00000b7);
    expect(program[5]![3]).toBe(97);
    expect(program[6]![3]).toBe(220);
    expect(userNamespaceFilter('ia32')).toBeNull();
  });
});

describe('squatterRules', () => {
  it('drops TCP sent from the controller’s ports, 15 ports a rule, without duplicates or port 0', () => {
    expect(squatterRules('SVC_APPS_1', [8000, 2222, 8080, 8000, 0])).toEqual([['-A', 'SVC_APPS_1', '-p', 'tcp', '-m', 'multiport', '--sports', '2222,8000,8080', '-j', 'DROP']]);
    expect(squatterRules('C', [])).toEqual([]);
    expect(squatterRules('C', Array.from({ length: 16 }, (_, i) => 1000 + i))).toHaveLength(2);
  });
});

describe('restoreInput', () => {
  it('declares every chain (created, or emptied in the same transaction) before its rules, and commits once', () => {
    const input = restoreInput([
      { chain: 'SVC_APPS_1', rules: [['-A', 'SVC_APPS_1', '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'REJECT']] },
      { chain: 'SVC_BUILD_1', rules: [['-A', 'SVC_BUILD_1', '-d', '10.0.0.0/8', '-j', 'REJECT']] },
    ]);
    expect(input).toBe(
      '*filter\n:SVC_APPS_1 - [0:0]\n:SVC_BUILD_1 - [0:0]\n-A SVC_APPS_1 -m addrtype --dst-type LOCAL -j REJECT\n-A SVC_BUILD_1 -d 10.0.0.0/8 -j REJECT\nCOMMIT\n',
    );
  });
});

describe('listenersOn', () => {
  it('finds the listening sockets (state 0A) on the given ports in /proc/net/tcp and tcp6, with their owners', () => {
    const tcp = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 300001        0 1146 1 0 100 0 0 10 0',
      '   1: 0100007F:1F40 0100007F:B373 01 00000000:00000000 00:00000000 00000000     0        0 1147 1 0 100 0 0 10 0',
      '   2: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1148 1 0 100 0 0 10 0',
      '',
    ].join('\n');
    const tcp6 = [
      '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 00000000000000000000000001000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 300002        0 1149 1 0 100 0 0 10 0',
    ].join('\n');
    expect(listenersOn(tcp, new Set([8000, 2222]))).toEqual([{ port: 8000, uid: 300001 }]);
    expect(listenersOn(tcp6, new Set([8000]))).toEqual([{ port: 8000, uid: 300002 }]);
    expect(listenersOn(tcp, new Set([22]))).toEqual([{ port: 22, uid: 0 }]);
  });
});
