import { field, h, idOf } from '../dom.js';
import { looksSecret, maskValue } from '../format.js';
import type { Ui } from '../ui.js';

/** Variables the platform sets itself: shown, never edited or unset. */
const PLATFORM_KEYS = new Set(['SVC_APP', 'SVC_RELEASE']);

/**
 * The app's config values: secret-looking ones masked until revealed, each editable and
 * removable (`Unset`), and a form to set one (a new key, or a new value for an existing one).
 * Every change is a new release.
 */
export function configSection(ui: Ui, app: string, values: Readonly<Record<string, string>>, revealed: Set<string>, refresh: () => Promise<void>): HTMLElement {
  const key = h('input', { name: 'key', autocomplete: 'off', spellcheck: 'false', required: true, pattern: '[A-Za-z_][A-Za-z0-9_]*' });
  const value = h('input', { name: 'value', autocomplete: 'off', spellcheck: 'false' });
  const set = h('button', { type: 'submit', id: 'config-set' }, 'Set');
  const form = h('form', { class: 'inline', 'aria-label': 'Set a config value' }, field('config-key', 'Key', key), field('config-value', 'Value', value), set);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = key.value.trim();
    void ui.act(set, async () => {
      await ui.api.setConfig(app, { [name]: value.value });
      await refresh();
      ui.done(`Set ${name}.`);
    });
  });

  const rows = Object.entries(values)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, text]) => {
      const id = idOf(name);
      const secret = looksSecret(name, text);
      const shown = !secret || revealed.has(name);
      const cell = h('td', { class: 'mono value' }, shown ? text : h('span', { 'aria-label': 'hidden value' }, maskValue(text)));
      const actions: HTMLElement[] = [];
      if (secret) {
        const reveal = h('button', { type: 'button', id: `reveal-${id}`, 'aria-pressed': shown ? 'true' : 'false', 'aria-label': `${shown ? 'Hide' : 'Reveal'} ${name}` }, shown ? 'Hide' : 'Reveal');
        reveal.addEventListener('click', () => {
          if (revealed.has(name)) revealed.delete(name);
          else revealed.add(name);
          void ui.act(reveal, refresh);
        });
        actions.push(reveal);
      }
      if (!PLATFORM_KEYS.has(name)) {
        const edit = h('button', { type: 'button', id: `edit-${id}`, 'aria-label': `Edit ${name}` }, 'Edit');
        edit.addEventListener('click', () => {
          key.value = name;
          value.value = text;
          value.focus();
          value.select();
        });
        const unset = h('button', { type: 'button', id: `unset-${id}`, 'aria-label': `Unset ${name}` }, 'Unset');
        unset.addEventListener('click', () => {
          void ui.act(unset, async () => {
            await ui.api.setConfig(app, { [name]: null });
            await refresh();
            ui.done(`Unset ${name}.`);
          });
        });
        actions.push(edit, unset);
      }
      return h('tr', {}, h('th', { scope: 'row', class: 'mono' }, name), cell, h('td', { class: 'actions' }, actions));
    });
  return h(
    'div',
    {},
    h(
      'div',
      { class: 'table-wrap' },
      h('table', { id: 'config-table' }, h('caption', { class: 'visually-hidden' }, 'Config values'), h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Key'), h('th', { scope: 'col' }, 'Value'), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))), h('tbody', {}, rows)),
    ),
    form,
  );
}
