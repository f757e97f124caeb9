import type { App, Structure } from '../model/entities';
import type { Repositories } from '../ports/repositories';
import { assertStructureQuota, assertUserProcessQuota, processCount, type Quotas } from '../rules/quotas';

/** How many apps are read at a time when the processes of one owner are added up. */
const OWNER_PAGE = 200;

/**
 * Checks the structure an app is about to get against the per-app quotas and, with the
 * other apps of its owner, the per-user one: processes are charged to the owner, whoever scales.
 * @throws QuotaExceeded
 */
export async function assertScaleQuotas(repos: Repositories, app: App, structure: Structure, quotas: Quotas): Promise<void> {
  assertStructureQuota(structure, quotas, app.structure);
  let others = 0;
  for (let offset = 0; ; offset += OWNER_PAGE) {
    const page = await repos.apps.listVisibleTo(app.owner, { offset, limit: OWNER_PAGE });
    for (const other of page.items) if (other.owner === app.owner && other.id !== app.id) others += processCount(other.structure);
    if (page.items.length < OWNER_PAGE || offset + OWNER_PAGE >= page.count) break;
  }
  assertUserProcessQuota(app.owner, others + processCount(structure), quotas, others + processCount(app.structure));
}
