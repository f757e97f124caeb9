import { Forbidden } from '../errors';
import type { App, User } from '../model/entities';
import type { Repositories } from '../ports/repositories';
import { canAdministerApp, canSeeApp } from '../rules/apps';
import { parentDomains } from '../rules/domains';

/** Whether the user may manage the app's domains and certificates: owner, collaborator or administrator. */
export async function mayManageApp(repos: Repositories, app: App | null, user: User): Promise<boolean> {
  if (app === null) return false;
  return canAdministerApp(app, user) || canSeeApp(app, user, await repos.permissions.has(app.id, user.username));
}

/** The refusal of a name under a domain another owner holds. */
export function domainNotControlled(domain: string, parent: string): Forbidden {
  return new Forbidden(
    `${domain} is under ${parent}, which an app of another owner holds: only someone who manages that app may add names under it (to an app of theirs, or to yours once you grant them access to it).`,
    'DOMAIN.NOT_CONTROLLED',
  );
}

/**
 * Checks that `user` may attach `domain` to `app`: a name under a domain held by an app of
 * another owner (that domain itself is unique, so this is a name beneath it) is that owner's
 * to give. It passes when every app of another owner holding a parent domain is one the user
 * manages (its owner, a collaborator, an administrator): that is how the parent's owner
 * shares a name under it with another tenant, by adding it to that tenant's app.
 * @throws Forbidden (`DOMAIN.NOT_CONTROLLED`)
 */
export async function assertMayClaimDomain(repos: Repositories, user: User, app: App, domain: string): Promise<void> {
  for (const parent of parentDomains(domain)) {
    const held = await repos.domains.find(parent);
    if (held === null || held.app === app.id) continue;
    const holder = await repos.apps.findById(held.app);
    if (holder === null || holder.owner === app.owner) continue;
    if (!(await mayManageApp(repos, holder, user))) throw domainNotControlled(domain, parent);
  }
}
