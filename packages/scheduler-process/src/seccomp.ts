/** The kernel's numbers for a seccomp filter that refuses new user namespaces (see `userNamespaceFilter`). */
const AUDIT_ARCH: Record<string, number> = { x64: 0xc000003e, arm64: 0xc00000b7 };
const SYSCALLS: Record<string, { clone: number; unshare: number; clone3: number }> = {
  x64: { clone: 56, unshare: 272, clone3: 435 },
  arm64: { clone: 220, unshare: 97, clone3: 435 },
};
const CLONE_NEWUSER = 0x10000000;
/** x32 system calls on x86-64 have this bit set: refused whole. */
const X32_SYSCALL_BIT = 0x40000000;
const EPERM = 1;
const ENOSYS = 38;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;

/** Offsets in the kernel's `struct seccomp_data`: the call's number, the architecture, the low half of the first argument. */
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;

/** One instruction of a classic BPF program: code, jump-if-true, jump-if-false (forward, relative), constant. */
type Instruction = [code: number, jt: number, jf: number, k: number];

/**
 * A seccomp filter (classic BPF, as bubblewrap's `--seccomp` reads it) that keeps a sandbox's
 * processes from making user namespaces: `unshare` and `clone` with CLONE_NEWUSER fail with
 * EPERM; `clone3`, whose flags a filter cannot read, fails with ENOSYS (the C library then
 * falls back to `clone`); system calls of another architecture (i386, x32) fail with EPERM.
 * Null on an architecture it does not know.
 */
export function userNamespaceFilter(arch: string = process.arch): Buffer | null {
  const audit = AUDIT_ARCH[arch];
  const calls = SYSCALLS[arch];
  if (audit === undefined || calls === undefined) return null;
  const program: Instruction[] = [
    /* 0 */ [BPF_LD_W_ABS, 0, 0, ARCH],
    /* 1 */ [BPF_JEQ_K, 0, 9, audit], // another architecture: 11
    /* 2 */ [BPF_LD_W_ABS, 0, 0, NR],
    /* 3 */ [BPF_JGE_K, 7, 0, X32_SYSCALL_BIT], // 11
    /* 4 */ [BPF_JEQ_K, 7, 0, calls.clone3], // 12
    /* 5 */ [BPF_JEQ_K, 2, 0, calls.unshare], // 8
    /* 6 */ [BPF_JEQ_K, 1, 0, calls.clone], // 8
    /* 7 */ [BPF_RET_K, 0, 0, RET_ALLOW],
    /* 8 */ [BPF_LD_W_ABS, 0, 0, ARG0_LOW],
    /* 9 */ [BPF_JSET_K, 1, 0, CLONE_NEWUSER], // 11
    /* 10 */ [BPF_RET_K, 0, 0, RET_ALLOW],
    /* 11 */ [BPF_RET_K, 0, 0, RET_ERRNO | EPERM],
    /* 12 */ [BPF_RET_K, 0, 0, RET_ERRNO | ENOSYS],
  ];
  const buffer = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], index) => {
    buffer.writeUInt16LE(code, index * 8);
    buffer.writeUInt8(jt, index * 8 + 2);
    buffer.writeUInt8(jf, index * 8 + 3);
    buffer.writeUInt32LE(k >>> 0, index * 8 + 4);
  });
  return buffer;
}
