import type { App, Structure } from '../model/entities';
import type { Repositories } from '../ports/repositories';
import { assertAppQuota, assertStructureQuota, assertUserProcessQuota, processCount, type Quotas } from '../rules/quotas';

/** How many apps are read at a time when the processes of one owner are added up. */
const OWNER_PAGE = 200;

/*
 * Quotas that count rows of several requests are decided inside the transaction that
 * writes, under a lock the database holds on the user they are charged to
 * (UserRepository.lockByUsername): concurrent requests, in this process or another
 * controller process on the same database, count one after another and each sees what
 * the one before it committed. The checks made before slow work (starting containers)
 * only fail fast; the one under the lock is the one that holds.
 */

/**
 * Checks the structure an app is about to get against the per-app quotas and, with the
 * other apps of its owner, the per-user one: processes are charged to the owner, whoever scales.
 * @throws QuotaExceeded
 */
export async function assertScaleQuotas(repos: Repositories, app: App, structure: Structure, quotas: Quotas): Promise<void> {
  assertStructureQuota(structure, quotas, app.structure);
  // A structure with no more processes than the app has cannot pass the owner's quota (the
  // rule refuses only growth): the owner's other apps need not be read.
  if (!growsProcesses(app, structure)) return;
  let others = 0;
  for (let offset = 0; ; offset += OWNER_PAGE) {
    const page = await repos.apps.listVisibleTo(app.owner, { offset, limit: OWNER_PAGE });
    for (const other of page.items) if (other.owner === app.owner && other.id !== app.id) others += processCount(other.structure);
    if (page.items.length < OWNER_PAGE || offset + OWNER_PAGE >= page.count) break;
  }
  assertUserProcessQuota(app.owner, others + processCount(structure), quotas, others + processCount(app.structure));
}

/**
 * Inside the transaction that gives `app` (as read, locked, in that transaction) the
 * structure `structure`: locks its owner and checks the quotas on what is committed now.
 * @throws QuotaExceeded
 */
export async function assertScaleQuotasLocked(tx: Repositories, app: App, structure: Structure, quotas: Quotas): Promise<void> {
  // No growth, nothing to count: concurrent changes of the owner's other apps cannot make it pass the quota.
  if (!growsProcesses(app, structure)) {
    assertStructureQuota(structure, quotas, app.structure);
    return;
  }
  await tx.users.lockByUsername(app.owner);
  await assertScaleQuotas(tx, app, structure, quotas);
}

/** Whether `structure` runs more processes than the app runs now. */
function growsProcesses(app: App, structure: Structure): boolean {
  return processCount(structure) > processCount(app.structure);
}

/**
 * Inside the transaction that creates an app for `owner`: locks the owner and counts the
 * apps they own now.
 * @throws QuotaExceeded (`apps_per_user`)
 */
export async function assertAppQuotaLocked(tx: Repositories, owner: string, quotas: Quotas): Promise<void> {
  await tx.users.lockByUsername(owner);
  assertAppQuota(await tx.apps.countOwnedBy(owner), quotas);
}
