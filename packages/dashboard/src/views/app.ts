import { field, h, replace } from '../dom.js';
import { appLink } from '../format.js';
import type { Ui } from '../ui.js';
import { collaboratorsSection, domainsSection } from './resources.js';
import { configSection } from './config.js';
import { logsPanel } from './logs.js';
import { processesSection } from './processes.js';
import { buildsSection, releasesSection } from './releases.js';

/** A titled part of the app page whose body is replaced when its data is loaded again. */
function section(id: string, title: string): { element: HTMLElement; body: HTMLElement } {
  const body = h('div', { class: 'section-body' }, h('p', {}, 'Loading…'));
  const element = h('section', { id, 'aria-labelledby': `${id}-title` }, h('h2', { id: `${id}-title`, tabindex: '-1' }, title), body);
  return { element, body };
}

/** Deleting the app, once its id is typed: the button stays disabled until it matches. */
function deleteForm(ui: Ui, app: string, navigate: (hash: string) => void): HTMLElement {
  const confirm = h('input', { name: 'confirm', autocomplete: 'off', spellcheck: 'false' });
  const remove = h('button', { type: 'submit', class: 'danger', disabled: true }, 'Delete app');
  confirm.addEventListener('input', () => {
    remove.disabled = confirm.value !== app;
  });
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Delete this app' },
    field('delete-confirm', `Type ${app} to delete the app, its releases, config and containers`, confirm),
    remove,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (confirm.value !== app) return;
    void ui.act(remove, async () => {
      await ui.api.deleteApp(app);
      ui.done(`Deleted ${app}.`);
      navigate('#/apps');
    });
  });
  return form;
}

/** The page of one app: header, releases, processes, config, builds, domains, collaborators and live logs. */
export function appView(ui: Ui, app: string, navigate: (hash: string) => void): { element: HTMLElement; stop: () => void } {
  const summary = h('p', { class: 'app-summary' }, 'Loading…');
  const releases = section('releases', 'Releases');
  const processes = section('processes', 'Processes');
  const config = section('config', 'Config');
  const builds = section('builds', 'Builds');
  const domains = section('domains', 'Domains and certificates');
  const collaborators = section('collaborators', 'Collaborators');
  const logs = logsPanel(ui.api, app);
  const revealed = new Set<string>();
  const refreshButton = h('button', { type: 'button', id: 'refresh' }, 'Refresh');

  const refresh = async (): Promise<void> => {
    const api = ui.api;
    const [info, platform, releaseList, containers, configJson, buildList, domainList, certificates, users] = await Promise.all([
      api.app(app),
      // Without the router's address (an older controller) the app's URL is shown as its host name.
      api.platform().catch(() => null),
      api.releases(app),
      api.containers(app),
      api.config(app),
      api.builds(app),
      api.domains(app),
      api.certificates().catch(() => []),
      api.collaborators(app),
    ]);
    const router = platform?.apps ?? null;
    const address = router === null ? null : appLink(info.url, router);
    replace(
      summary,
      address === null ? info.url : h('a', { href: address, rel: 'noopener noreferrer', target: '_blank' }, address),
      ` · owner ${info.owner} · current release v${releaseList[0]?.version ?? '?'}`,
    );
    replace(releases.body, releasesSection(ui, app, releaseList, refresh));
    replace(processes.body, processesSection(ui, app, info.structure, containers, refresh));
    replace(config.body, configSection(ui, app, configJson.values, revealed, refresh));
    replace(builds.body, buildsSection(ui, app, buildList, refresh));
    replace(domains.body, domainsSection(ui, app, info.url, address ?? info.url, domainList, certificates, refresh));
    replace(collaborators.body, collaboratorsSection(ui, app, info.owner, users, refresh));
  };
  refreshButton.addEventListener('click', () => {
    void ui.act(refreshButton, refresh);
  });
  refresh().catch((error: unknown) => {
    replace(summary, 'This app could not be loaded.');
    for (const part of [releases, processes, config, builds, domains, collaborators]) replace(part.body, h('p', {}, 'Not loaded: see the message above.'));
    ui.error(error);
  });

  const element = h(
    'div',
    { class: 'app-page' },
    h('p', { class: 'crumbs' }, h('a', { href: '#/apps' }, 'Apps'), ' / '),
    h('h1', { id: 'page-title', tabindex: '-1' }, app),
    summary,
    refreshButton,
    h('div', { class: 'grid' }, releases.element, processes.element, logs.element, config.element, builds.element, domains.element, collaborators.element),
    h('section', { id: 'danger', 'aria-labelledby': 'danger-title' }, h('h2', { id: 'danger-title' }, 'Delete'), deleteForm(ui, app, navigate)),
  );
  return { element, stop: logs.stop };
}
