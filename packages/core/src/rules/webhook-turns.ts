/** A webhook with a delivery due, and the user who owns it. */
export interface DeliveryTurn {
  webhook: string;
  owner: string;
}

/**
 * The index in `waiting` of the webhook to attempt next, or null when none may start.
 * An owner already running `perOwner` attempts waits; of the others, the owner with the
 * fewest attempts running goes first, ties going to the owner after `lastOwner` in name
 * order (round robin); within an owner the webhooks keep their order (oldest delivery
 * first). So however many receivers one owner has, slow or failing, another owner's
 * delivery gets the next free slot.
 */
export function nextDeliveryTurn(
  waiting: readonly DeliveryTurn[],
  running: ReadonlyMap<string, number>,
  perOwner: number,
  lastOwner: string | null,
): number | null {
  const owners = [...new Set(waiting.map((turn) => turn.owner))].filter((owner) => (running.get(owner) ?? 0) < perOwner).sort();
  if (owners.length === 0) return null;
  const after = lastOwner === null ? 0 : owners.findIndex((owner) => owner > lastOwner);
  const order = after <= 0 ? owners : [...owners.slice(after), ...owners.slice(0, after)];
  let chosen = order[0] as string;
  for (const owner of order) {
    if ((running.get(owner) ?? 0) < (running.get(chosen) ?? 0)) chosen = owner;
  }
  return waiting.findIndex((turn) => turn.owner === chosen);
}
