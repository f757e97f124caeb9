import type { App, AppsAddress } from '../api.js';
import { field, h, replace } from '../dom.js';
import { appLink, processCounts } from '../format.js';
import type { Ui } from '../ui.js';

/**
 * One row of the apps list: the app's id as a link to its page, its URL (a link to the app
 * itself on the router, or its host name as text when the router's address is not known),
 * owner and process counts.
 */
function appRow(app: App, router: AppsAddress | null): HTMLElement {
  const url = router === null ? app.url : appLink(app.url, router);
  return h(
    'tr',
    {},
    h('th', { scope: 'row' }, h('a', { href: `#/apps/${app.id}` }, app.id)),
    h('td', { class: 'mono' }, router === null ? url : h('a', { href: url, rel: 'noopener noreferrer', target: '_blank' }, url)),
    h('td', {}, app.owner),
    h('td', {}, processCounts(app.structure)),
  );
}

/** The apps the user owns or collaborates on (administrators: all), and a form to create one. */
export function appsView(ui: Ui, navigate: (hash: string) => void): HTMLElement {
  const list = h('div', { class: 'table-wrap', 'aria-live': 'polite' }, h('p', {}, 'Loading apps…'));
  const name = h('input', { name: 'id', autocomplete: 'off', spellcheck: 'false', pattern: '[a-z0-9]+(-[a-z0-9]+)*', maxlength: '63' });
  const create = h('button', { type: 'submit' }, 'Create app');
  const form = h(
    'form',
    { class: 'inline', 'aria-labelledby': 'create-title' },
    h('h2', { id: 'create-title' }, 'Create an app'),
    field('create-app-id', 'App name (leave empty for a generated one)', name),
    create,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void ui.act(create, async () => {
      const app = await ui.api.createApp(name.value.trim() === '' ? null : name.value.trim());
      ui.done(`Created ${app.id}.`);
      navigate(`#/apps/${app.id}`);
    });
  });

  const load = async (): Promise<void> => {
    // Without the router's address (an older controller) the URLs are shown as host names.
    const [apps, platform] = await Promise.all([ui.api.apps(), ui.api.platform().catch(() => null)]);
    replace(
      list,
      apps.length === 0
        ? h('p', {}, 'No apps yet: create one below, or with svc apps:create.')
        : h(
            'table',
            {},
            h('caption', {}, `${apps.length} app${apps.length === 1 ? '' : 's'}`),
            h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'App'), h('th', { scope: 'col' }, 'URL'), h('th', { scope: 'col' }, 'Owner'), h('th', { scope: 'col' }, 'Processes'))),
            h('tbody', {}, apps.map((app) => appRow(app, platform?.apps ?? null))),
          ),
    );
  };
  load().catch((error: unknown) => {
    replace(list, h('p', {}, 'The apps could not be listed.'));
    ui.error(error);
  });

  return h('div', {}, h('h1', { id: 'page-title', tabindex: '-1' }, 'Apps'), list, form);
}
