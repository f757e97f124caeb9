import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { buildEgressRules, buildJump, resolversOf } from './build-egress';
import type { BuildDestination } from '@svc/core';
import type { UidRange } from './sandbox';

const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

function iptables(tool: string, args: string[]): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    // -w: wait for the lock that other iptables users (another controller, Docker) may hold.
    execFile(tool, ['-w', '10', ...args], { timeout: 20_000, env: { PATH } }, (error, stdout, stderr) => {
      resolve({ ok: error === null, output: `${stdout}${stderr}`.trim() });
    });
  });
}

/** Runs `<tool>-restore --noflush` with `input`: one transaction, all or nothing. */
function iptablesRestore(tool: string, input: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(`${tool}-restore`, ['-w', '10', '--noflush'], { env: { PATH }, stdio: ['pipe', 'pipe', 'pipe'], timeout: 20_000 });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', (error) => resolve({ ok: false, output: error.message }));
    child.on('close', (code) => resolve({ ok: code === 0, output: output.trim() }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/**
 * The input of `iptables-restore --noflush` that makes each chain hold exactly `rules` (iptables
 * arguments starting with `-A <chain>`): declaring a chain creates it, or empties it, in the same
 * transaction that fills it, so no packet ever meets it empty or half-filled.
 */
export function restoreInput(chains: Array<{ chain: string; rules: string[][] }>): string {
  const lines = ['*filter', ...chains.map(({ chain }) => `:${chain} - [0:0]`)];
  for (const { rules } of chains) for (const rule of rules) lines.push(rule.join(' '));
  lines.push('COMMIT', '');
  return lines.join('\n');
}

/**
 * Keeps the apps' processes (the uids of a range) from opening connections to this machine's
 * own addresses (loopback and every address of its interfaces: the database, the API, other
 * apps' ports, any local service), except the router's ports. Packets of connections that
 * others opened to the apps pass on loopback only (the router, the readiness checks): an app
 * answers no other machine, whatever address it listens on.
 *
 * One chain per uid range, `SVC_APPS_<from>`, in the filter table of iptables and ip6tables,
 * reached from OUTPUT by the owner match of the range. Installing is idempotent (the chain is
 * rebuilt); `remove` takes it all away.
 *
 * Build steps (the same uids, with the build group as a supplementary group) also pass a
 * second chain, `SVC_BUILD_<from>` (see `buildEgressRules`): no address of this machine on any
 * port, no private or link-local range, DNS only to the resolvers of /etc/resolv.conf.
 */
export class LoopbackFirewall {
  private readonly chain: string;
  private readonly owner: string;
  private readonly buildChain: string;
  private readonly buildJump: string[];

  constructor(
    range: UidRange,
    buildGroup: number,
    private readonly buildAllowed: readonly BuildDestination[] = [],
  ) {
    this.chain = `SVC_APPS_${range.from}`;
    this.owner = `${range.from}-${range.to}`;
    this.buildChain = `SVC_BUILD_${range.from}`;
    this.buildJump = buildJump(this.buildChain, range, buildGroup);
  }

  /**
   * `allowedPorts`: the local ports apps may connect to (the router's). `controllerPorts`: the
   * controller's own listening ports (API, router, git), which no app may answer on, on any
   * address: a packet an app's socket sends from one of them (the SYN-ACK of a squatter's
   * listener on `[::1]`, `127.0.0.2`, ...) is dropped, so no connection to it is ever made.
   * @throws Error naming what is missing when the rules cannot be installed.
   */
  async install(allowedPorts: number[], controllerPorts: number[] = []): Promise<void> {
    const tools = ['iptables', 'ip6tables'];
    for (const tool of tools) {
      if (!existsSync(`/usr/sbin/${tool}`) && !existsSync(`/sbin/${tool}`)) {
        throw new Error(`${tool} is not installed (apt-get install iptables): apps could reach the controller's database and API`);
      }
    }
    let resolvConf = '';
    try {
      resolvConf = readFileSync('/etc/resolv.conf', 'utf8');
    } catch {
      // No resolver: builds resolve no name, as apps would not.
    }
    const resolvers = resolversOf(resolvConf);
    for (const [tool, family] of [['iptables', 4], ['ip6tables', 6]] as const) {
      // A chain left by an earlier controller process (one that was killed, or one that left its
      // apps running for the next) is replaced in one transaction: processes still running as
      // apps' users meet the old rules or the new ones, never an empty chain.
      const input = restoreInput([
        { chain: this.chain, rules: this.appRules(allowedPorts, controllerPorts) },
        { chain: this.buildChain, rules: buildEgressRules(this.buildChain, family, family === 4 ? resolvers.ipv4 : resolvers.ipv6, this.buildAllowed) },
      ]);
      const restored = await iptablesRestore(tool, input);
      if (!restored.ok) throw new Error(`${tool}-restore cannot install the chains ${this.chain} and ${this.buildChain}: ${restored.output || 'no output'}`);
      const jump = ['OUTPUT', '-m', 'owner', '--uid-owner', this.owner, '-j', this.chain];
      if (!(await iptables(tool, ['-C', ...jump])).ok) await this.must(tool, ['-I', ...jump]);
      if (!(await iptables(tool, ['-C', ...this.buildJump])).ok) await this.must(tool, ['-I', ...this.buildJump]);
    }
  }

  /** The rules of the apps' chain (see `install`). */
  private appRules(allowedPorts: number[], controllerPorts: number[]): string[][] {
    const chain = this.chain;
    const rules = squatterRules(chain, controllerPorts);
    // Apps listen on every address, but answer only on loopback, where the router (always on
    // this machine, reaching them at 127.0.0.1) connects: no connection from another machine
    // is ever made, whatever address the app binds.
    rules.push(['-A', chain, '-m', 'conntrack', '--ctdir', 'REPLY', '!', '-o', 'lo', '-j', 'DROP']);
    rules.push(['-A', chain, '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN']);
    // An address of this machine translated elsewhere (ports published by a container engine) is local too.
    rules.push(['-A', chain, '-m', 'conntrack', '--ctstate', 'DNAT', '-j', 'REJECT']);
    for (const port of [...new Set(allowedPorts)]) {
      rules.push(['-A', chain, '-p', 'tcp', '-m', 'addrtype', '--dst-type', 'LOCAL', '--dport', String(port), '-j', 'RETURN']);
    }
    rules.push(['-A', chain, '-p', 'tcp', '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'REJECT', '--reject-with', 'tcp-reset']);
    rules.push(['-A', chain, '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'REJECT']);
    return rules;
  }

  /** Takes the rules away; rules that are not there are no error. */
  async remove(): Promise<void> {
    for (const tool of ['iptables', 'ip6tables']) {
      const jump = ['OUTPUT', '-m', 'owner', '--uid-owner', this.owner, '-j', this.chain];
      while ((await iptables(tool, ['-C', ...jump])).ok) {
        if (!(await iptables(tool, ['-D', ...jump])).ok) break;
      }
      await iptables(tool, ['-F', this.chain]);
      await iptables(tool, ['-X', this.chain]);
      while ((await iptables(tool, ['-C', ...this.buildJump])).ok) {
        if (!(await iptables(tool, ['-D', ...this.buildJump])).ok) break;
      }
      await iptables(tool, ['-F', this.buildChain]);
      await iptables(tool, ['-X', this.buildChain]);
    }
  }

  private async must(tool: string, args: string[]): Promise<void> {
    const outcome = await iptables(tool, args);
    if (!outcome.ok) throw new Error(`${tool} ${args.join(' ')} failed: ${outcome.output || 'no output'}`);
  }
}

/**
 * The rules that keep apps from answering on the controller's ports: TCP packets an app's
 * socket sends from one of them are dropped (before the rule that lets replies through), on
 * every address. None without ports.
 */
export function squatterRules(chain: string, controllerPorts: number[]): string[][] {
  const ports = [...new Set(controllerPorts)].filter((port) => Number.isInteger(port) && port > 0 && port <= 65535).sort((a, b) => a - b);
  const rules: string[][] = [];
  // multiport takes at most 15 ports a rule.
  for (let at = 0; at < ports.length; at += 15) {
    rules.push(['-A', chain, '-p', 'tcp', '-m', 'multiport', '--sports', ports.slice(at, at + 15).join(','), '-j', 'DROP']);
  }
  return rules;
}
