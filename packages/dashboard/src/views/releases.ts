import type { Build, Release } from '../api.js';
import { field, h, idOf, time } from '../dom.js';
import { canRollBackTo, parseProcfile, shortSha } from '../format.js';
import type { Ui } from '../ui.js';

/**
 * The release timeline, newest first: version, summary, who and when; the current release
 * (the newest) is marked, and every other one that can be rolled back to (canRollBackTo) has
 * a `Roll back to v<N>` button. A refused rollback shows the API's reason in the alert line.
 */
export function releasesSection(ui: Ui, app: string, releases: readonly Release[], refresh: () => Promise<void>): HTMLElement {
  const current = releases[0] ?? null;
  return h(
    'ol',
    { class: 'timeline', 'aria-label': 'Releases, newest first' },
    releases.map((release) => {
      const isCurrent = release.version === current?.version;
      const button = isCurrent || current === null || !canRollBackTo(release, current) ? null : h('button', { type: 'button', id: `rollback-v${release.version}` }, `Roll back to v${release.version}`);
      button?.addEventListener('click', () => {
        void ui.act(button, async () => {
          const result = await ui.api.rollback(app, release.version);
          await refresh();
          ui.done(`Rolled back to v${release.version}: the current release is now v${result.version}.`);
        });
      });
      return h(
        'li',
        { class: isCurrent ? 'release current' : 'release', 'aria-current': isCurrent ? 'true' : null },
        h('span', { class: 'version' }, `v${release.version}`),
        isCurrent ? h('span', { class: 'badge' }, 'current') : null,
        h('span', { class: 'summary' }, release.summary),
        h('span', { class: 'meta' }, `by ${release.owner}, `, time(release.created)),
        button,
      );
    }),
  );
}

/** The builds, newest first, with their image and commit, and a form to deploy an image with a Procfile. */
export function buildsSection(ui: Ui, app: string, builds: readonly Build[], refresh: () => Promise<void>): HTMLElement {
  const image = h('input', { name: 'image', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'registry.example.com/team/app:1.2' });
  const procfile = h('textarea', { name: 'procfile', rows: '3', spellcheck: 'false', placeholder: 'web: node server.js' });
  const deploy = h('button', { type: 'submit' }, 'Deploy');
  const form = h('form', { class: 'stacked', 'aria-label': 'Deploy an image' }, field('deploy-image', 'Image', image), field('deploy-procfile', 'Procfile (one "type: command" a line)', procfile), deploy);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void ui.act(deploy, async () => {
      const build = await ui.api.deploy(app, image.value.trim(), parseProcfile(procfile.value));
      await refresh();
      ui.done(`Deployed ${build.image}.`);
    });
  });
  const table =
    builds.length === 0
      ? h('p', {}, 'No build yet: push with git, or deploy an image below.')
      : h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            {},
            h('caption', { class: 'visually-hidden' }, 'Builds, newest first'),
            h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Image'), h('th', { scope: 'col' }, 'Commit'), h('th', { scope: 'col' }, 'By'), h('th', { scope: 'col' }, 'When'))),
            h(
              'tbody',
              {},
              builds.map((build) =>
                h('tr', { id: `build-${idOf(build.uuid)}` }, h('td', { class: 'mono' }, build.image), h('td', { class: 'mono', title: build.sha }, shortSha(build.sha)), h('td', {}, build.owner), h('td', {}, time(build.created))),
              ),
            ),
          ),
        );
  return h('div', {}, table, form);
}
