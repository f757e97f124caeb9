import type Docker from 'dockerode';
import { LABELS, engineStatus } from './engine';

/*
 * Whose an engine object is. DOCKER_INSTANCE names a controller on the engine (label
 * `svc.instance`), and a controller removes its instance's containers that its database does
 * not know as leftovers of an earlier process. Two installations given the same instance by
 * mistake (compose's `default`, twice) would each take the other's apps for leftovers. The
 * installation label (`svc.installation`, a fingerprint of SECRET_KEY, which every controller
 * process of one installation shares) tells them apart: a scheduler whose instance has
 * objects of another installation refuses to start before it adopts or removes anything.
 */

/** Who owns the engine objects a scheduler makes: its instance and, when known, its installation. */
export interface Owner {
  readonly instance: string;
  /** The installation's fingerprint; null when unknown: objects are not labelled with one, and every object of the instance is taken as the owner's. */
  readonly installation: string | null;
}

/** The labels that name an object's owner. */
export function ownerLabels(owner: Owner): Record<string, string> {
  return { [LABELS.instance]: owner.instance, ...(owner.installation === null ? {} : { [LABELS.installation]: owner.installation }) };
}

/**
 * Whether an object with these labels is another installation's: it names an installation,
 * not the owner's. One that names none was made by an earlier version (or by a scheduler that
 * did not know its installation) and is taken as the owner's, as it always was.
 */
export function isForeign(labels: Record<string, string> | undefined, owner: Owner): boolean {
  const theirs = labels?.[LABELS.installation];
  return owner.installation !== null && theirs !== undefined && theirs !== owner.installation;
}

/** Whether an object with these labels is the owner's to adopt or remove: of its instance, and of no other installation. */
export function isOwnedBy(labels: Record<string, string> | undefined, owner: Owner): boolean {
  return labels?.[LABELS.instance] === owner.instance && !isForeign(labels, owner);
}

/** An engine object as the check reads it: its kind (`container`, `network`, `service`), name and labels. */
export interface LabelledObject {
  kind: string;
  name: string;
  labels: Record<string, string> | undefined;
}

/** A start refused because the instance has objects of another installation; `setting` is the variable to change. */
export class InstanceOfAnotherInstallation extends Error {
  readonly setting = 'DOCKER_INSTANCE';

  constructor(
    readonly instance: string,
    /** The first object of each kind that is another installation's, as `kind name`. */
    readonly objects: string[],
    where: string,
    fix: string,
  ) {
    super(`DOCKER_INSTANCE: the instance "${instance}" on this ${where} belongs to another installation (${objects.join(', ')}): give this installation its own ${fix}`);
    this.name = 'InstanceOfAnotherInstallation';
  }
}

/** What a Docker scheduler's installation must change to get an instance of its own. */
export const DOCKER_INSTANCE_FIX = 'DOCKER_INSTANCE, DOCKER_NETWORK and DOCKER_BRIDGE';

/**
 * The refusal when any of these objects (the instance's, and the platform network) is another
 * installation's, naming the first of each kind; null when none is, or the owner's installation is unknown.
 */
export function foreignInstanceProblem(owner: Owner, objects: LabelledObject[], where = 'engine', fix = DOCKER_INSTANCE_FIX): InstanceOfAnotherInstallation | null {
  const named = new Map<string, string>();
  for (const object of objects) if (isForeign(object.labels, owner) && !named.has(object.kind)) named.set(object.kind, `${object.kind} ${object.name}`);
  return named.size === 0 ? null : new InstanceOfAnotherInstallation(owner.instance, [...named.values()], where, fix);
}

/**
 * Reads the instance's containers and the platform network (when it exists) and refuses when
 * any is another installation's; touches nothing but a network of another installation that no
 * container is on, which it removes. Does nothing when the installation is unknown.
 * @throws InstanceOfAnotherInstallation naming them; Error when the engine refuses to answer.
 */
export async function assertInstanceOwned(docker: Docker, owner: Owner, network: string): Promise<void> {
  if (owner.installation === null) return;
  const listed = await docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${owner.instance}`] } });
  const objects: LabelledObject[] = listed.map((info) => ({ kind: 'container', name: (info.Names[0] ?? info.Id).replace(/^\//, ''), labels: info.Labels }));
  let abandoned = false;
  try {
    const found = (await docker.getNetwork(network).inspect()) as Docker.NetworkInspectInfo;
    abandoned = isForeign(found.Labels ?? {}, owner) && Object.keys(found.Containers ?? {}).length === 0;
    if (!abandoned) objects.push({ kind: 'network', name: network, labels: found.Labels ?? {} });
  } catch (error) {
    if (engineStatus(error) !== 404) throw error;
  }
  const problem = foreignInstanceProblem(owner, objects);
  if (problem !== null) throw problem;
  if (abandoned) {
    // Another installation's network with no container on, and none of its containers left on
    // the instance: left by an installation that is gone (its data and key deleted, a fresh
    // start with the same settings). It goes, and this installation makes its own.
    await docker
      .getNetwork(network)
      .remove()
      .catch((error: unknown) => {
        if (engineStatus(error) !== 404) throw error;
      });
  }
}
