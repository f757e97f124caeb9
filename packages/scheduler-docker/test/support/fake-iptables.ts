/// <reference types="jest" />
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * A stand-in for iptables' filter table, for the guards' scripts without root: a sh script
 * keeping one file of rules per chain, answering -S, -N, -F, -X, -A, -I, -C and -D with
 * iptables' exit statuses and messages (1 for a rule or chain that is not there, 4 without
 * the privilege when the table says `deny`).
 */
const fake = (dir: string): string => `#!/bin/sh
d='${dir}'
[ -e "$d/deny" ] && { echo 'iptables v1.8.9 (fake): Permission denied (you must be root)' >&2; exit 4; }
[ "$1" = -w ] && shift
op=$1; chain=$2; f="$d/chains/$2"
[ $# -ge 2 ] && shift 2 || shift $#
missing() { echo 'iptables: No chain/target/match by that name.' >&2; exit 1; }
badrule() { echo 'iptables: Bad rule (does a matching rule exist in that chain?).' >&2; exit 1; }
list() { grep -qxF -- "$1" "$d/builtin" && echo "-P $1 ACCEPT" || echo "-N $1"; sed "s/^/-A $1 /" "$d/chains/$1"; }
case $op in
  -S) if [ -n "$chain" ]; then [ -f "$f" ] || missing; list "$chain"; else for c in $(ls "$d/chains"); do list "$c"; done; fi ;;
  -N) [ -f "$f" ] && { echo 'iptables: Chain already exists.' >&2; exit 1; }; : > "$f" ;;
  -F) [ -f "$f" ] || missing; : > "$f" ;;
  -X) [ -f "$f" ] || missing
      [ -s "$f" ] && { echo 'iptables: Directory not empty.' >&2; exit 1; }
      cat "$d"/chains/* | grep -q -- "-j $chain\\$" && { echo 'iptables: Too many links.' >&2; exit 1; }
      rm "$f" ;;
  -A) [ -f "$f" ] || missing; printf '%s\\n' "$*" >> "$f" ;;
  -I) [ -f "$f" ] || missing; p=$1; shift
      awk -v p="$p" -v r="$*" 'NR == p { print r } { print } END { if (NR < p) print r }' "$f" > "$f.new" && mv "$f.new" "$f" ;;
  -C) [ -f "$f" ] && grep -qxF -- "$*" "$f" || badrule ;;
  -D) [ -f "$f" ] && grep -qxF -- "$*" "$f" || badrule
      awk -v r="$*" '!gone && $0 == r { gone = 1; next } { print }' "$f" > "$f.new" && mv "$f.new" "$f" ;;
  *) echo "iptables (fake): unknown option $op" >&2; exit 2 ;;
esac
`;

/** The fake's table: the built-in chains' names, every chain's rules (as `iptables -S` prints them after `-A <chain>`). */
export interface FakeTable {
  builtin: string[];
  chains: Record<string, string[]>;
  deny?: boolean;
}

/** A fake iptables in `dir` with the given table; `command` is what a runner calls, `table()` reads its state. */
export async function fakeIptables(dir: string, table: FakeTable): Promise<{ command: string[]; table: () => FakeTable; set: (table: FakeTable) => Promise<void> }> {
  const script = join(dir, 'iptables');
  await writeFile(script, fake(dir));
  await chmod(script, 0o755);
  const set = async (next: FakeTable): Promise<void> => {
    await rm(join(dir, 'chains'), { recursive: true, force: true });
    await mkdir(join(dir, 'chains'));
    await writeFile(join(dir, 'builtin'), next.builtin.map((name) => `${name}\n`).join(''));
    for (const [chain, rules] of Object.entries(next.chains)) await writeFile(join(dir, 'chains', chain), rules.map((rule) => `${rule}\n`).join(''));
    if (next.deny === true) await writeFile(join(dir, 'deny'), '');
    else await rm(join(dir, 'deny'), { force: true });
  };
  await set(table);
  const read = (): FakeTable => ({
    builtin: readFileSync(join(dir, 'builtin'), 'utf8').split('\n').filter(Boolean),
    chains: Object.fromEntries(readdirSync(join(dir, 'chains')).sort().map((chain) => [chain, readFileSync(join(dir, 'chains', chain), 'utf8').split('\n').filter(Boolean)])),
    ...(existsSync(join(dir, 'deny')) ? { deny: true } : {}),
  });
  return { command: [script, '-w'], table: read, set };
}

/** A table with the built-in chains and, when `dockerUser`, the engine's DOCKER-USER chain. */
export function emptyTable(dockerUser: boolean): FakeTable {
  const builtin = ['FORWARD', 'INPUT', 'OUTPUT'];
  return { builtin, chains: Object.fromEntries([...builtin, ...(dockerUser ? ['DOCKER-USER'] : [])].sort().map((name) => [name, [] as string[]])) };
}
