import type { Certificate, Domain } from '../api.js';
import { field, h, idOf, time } from '../dom.js';
import { certificateCovers } from '../format.js';
import type { Ui } from '../ui.js';

/** A list with a remove button per item and a one-field form to add one. */
function editableList(ui: Ui, options: { name: string; items: string[]; label: string; formLabel: string; empty: string; add: (value: string) => Promise<void>; remove: (value: string) => Promise<void>; refresh: () => Promise<void> }): HTMLElement {
  const input = h('input', { autocomplete: 'off', spellcheck: 'false', required: true });
  const add = h('button', { type: 'submit', id: `${options.name}-add` }, 'Add');
  const form = h('form', { class: 'inline', 'aria-label': options.formLabel }, field(`${options.name}-input`, options.label, input), add);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = input.value.trim();
    void ui.act(add, async () => {
      await options.add(value);
      await options.refresh();
      ui.done(`Added ${value}.`);
    });
  });
  return h(
    'div',
    {},
    options.items.length === 0
      ? h('p', {}, options.empty)
      : h(
          'ul',
          { class: 'plain' },
          options.items.map((item) => {
            const remove = h('button', { type: 'button', id: `${options.name}-remove-${idOf(item)}`, 'aria-label': `Remove ${item}` }, 'Remove');
            remove.addEventListener('click', () => {
              void ui.act(remove, async () => {
                await options.remove(item);
                await options.refresh();
                ui.done(`Removed ${item}.`);
              });
            });
            return h('li', {}, h('span', { class: 'mono' }, item), ' ', remove);
          }),
        ),
    form,
  );
}

/**
 * The app's custom domains, and the user's certificates that cover the app's hosts: its own
 * (`host`, the `url` of the API) and its domains. `address` is where it answers (its link).
 */
export function domainsSection(ui: Ui, app: string, host: string, address: string, domains: readonly Domain[], certificates: readonly Certificate[], refresh: () => Promise<void>): HTMLElement {
  const hosts = [host, ...domains.map((d) => d.domain)];
  const mine = certificates.filter((cert) => hosts.some((host) => certificateCovers(cert.common_name, host)));
  return h(
    'div',
    {},
    editableList(ui, {
      name: 'domain',
      items: domains.map((d) => d.domain),
      label: 'Domain to add',
      formLabel: 'Add a domain',
      empty: `No custom domain: the app answers at ${address}.`,
      add: async (value) => void (await ui.api.addDomain(app, value)),
      remove: (value) => ui.api.removeDomain(app, value),
      refresh,
    }),
    h('h3', {}, 'Certificates'),
    mine.length === 0
      ? h('p', {}, 'No certificate of yours covers these hosts (add one with svc certs:add).')
      : h('ul', { class: 'plain' }, mine.map((cert) => h('li', {}, h('span', { class: 'mono' }, cert.common_name), ', expires ', time(cert.expires)))),
  );
}

/** The app's collaborators (the owner is not listed), with add and remove. */
export function collaboratorsSection(ui: Ui, app: string, owner: string, users: readonly string[], refresh: () => Promise<void>): HTMLElement {
  return h(
    'div',
    {},
    h('p', {}, `Owner: ${owner}.`),
    editableList(ui, {
      name: 'collaborator',
      items: [...users],
      label: 'Username of a collaborator to add',
      formLabel: 'Add a collaborator',
      empty: 'No collaborator.',
      add: (value) => ui.api.addCollaborator(app, value),
      remove: (value) => ui.api.removeCollaborator(app, value),
      refresh,
    }),
  );
}
