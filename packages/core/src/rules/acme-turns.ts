import type { TlsName } from '../model/tls';

/** A name due for an issuance attempt, with the user who owns its app. */
export interface IssuanceCandidate {
  name: string;
  owner: string;
}

/**
 * The index in `waiting` of the next name to attempt, or null when none is waiting. Owners
 * take turns: the owner with the fewest attempts running goes first, ties going to the owner
 * after `lastOwner` in name order (round robin), and within an owner the names keep their
 * order. So however many names one owner has waiting or stalled, another owner's name gets
 * the next free slot.
 */
export function nextTurn(waiting: readonly IssuanceCandidate[], running: ReadonlyMap<string, number>, lastOwner: string | null): number | null {
  const owners = [...new Set(waiting.map((candidate) => candidate.owner))].sort();
  if (owners.length === 0) return null;
  // Round robin: the owners after the last one served come first, then from the start.
  const after = lastOwner === null ? 0 : owners.findIndex((owner) => owner > lastOwner);
  const turn = after <= 0 ? owners : [...owners.slice(after), ...owners.slice(0, after)];
  let chosen = turn[0] as string;
  for (const owner of turn) {
    if ((running.get(owner) ?? 0) < (running.get(chosen) ?? 0)) chosen = owner;
  }
  return waiting.findIndex((candidate) => candidate.owner === chosen);
}

/** The reason a name shows while its owner's other names are ahead of it (ACME_PENDING_PER_USER). */
export function pendingCapReason(cap: number): string {
  return `waiting: ${cap} other names of this app's owner are waiting for their first certificate (ACME_PENDING_PER_USER); this one is ordered once one of them is issued or removed`;
}

/** Whether a name waits on its owner's cap of pending names (the reason pendingCapReason gives). */
export function waitsOnPendingCap(row: Pick<TlsName, 'state' | 'reason'>): boolean {
  return row.state === 'pending' && row.reason !== null && row.reason.startsWith('waiting: ');
}

/**
 * The names over their owner's cap of pending orders: of each owner's names without a
 * certificate (being ordered, failed and waiting for their next attempt, or not tried yet),
 * the first `cap` in name order may be ordered; the others wait. Renewals of issued names
 * are not counted: a certificate that is served is never left to expire for a newer name.
 */
export function overPendingCap(rows: ReadonlyArray<Pick<TlsName, 'name' | 'certificate'> & { owner: string }>, cap: number): Set<string> {
  const byOwner = new Map<string, string[]>();
  for (const row of rows) {
    if (row.certificate !== null) continue;
    const names = byOwner.get(row.owner) ?? [];
    names.push(row.name);
    byOwner.set(row.owner, names);
  }
  const over = new Set<string>();
  for (const names of byOwner.values()) {
    for (const name of names.sort().slice(cap)) over.add(name);
  }
  return over;
}

/**
 * Whether a rate limit the ACME server answered (HTTP 429, `rateLimited`) is the account's
 * (new orders per account, new accounts), which pauses every new order, or one of a name's
 * own (certificates per registered domain, duplicate certificates, failed validations),
 * which the server's problem detail names by its domain and which puts off that name only:
 * no tenant can pause everyone's certificates by exhausting a limit of its own domain.
 */
export function rateLimitScope(detail: string, name: string): 'account' | 'name' {
  const text = detail.toLowerCase();
  const labels = name.toLowerCase().split('.');
  for (let i = 0; i < labels.length - 1; i += 1) {
    if (text.includes(labels.slice(i).join('.'))) return 'name';
  }
  return 'account';
}
