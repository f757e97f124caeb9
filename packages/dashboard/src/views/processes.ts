import type { Container } from '../api.js';
import { h, idOf } from '../dom.js';
import type { Ui } from '../ui.js';

/**
 * Process types (from the app's structure and its containers), each with its containers'
 * states, a count to scale to and a restart button; and a restart of every container.
 */
export function processesSection(ui: Ui, app: string, structure: Readonly<Record<string, number>>, containers: readonly Container[], refresh: () => Promise<void>): HTMLElement {
  const types = [...new Set([...Object.keys(structure), ...containers.map((c) => c.type)])].sort();
  if (types.length === 0) return h('p', {}, 'No processes: deploy a build first.');
  const restartAll = h('button', { type: 'button', id: 'restart-all' }, 'Restart all');
  restartAll.addEventListener('click', () => {
    void ui.act(restartAll, async () => {
      const restarted = await ui.api.restart(app, null);
      await refresh();
      ui.done(`Restarted ${restarted.length} container${restarted.length === 1 ? '' : 's'}.`);
    });
  });
  return h(
    'div',
    {},
    h(
      'ul',
      { class: 'types' },
      types.map((type) => {
        const id = idOf(type);
        const mine = containers.filter((c) => c.type === type);
        const count = h('input', { id: `scale-${id}`, type: 'number', min: '0', max: '100', step: '1', inputmode: 'numeric', value: String(structure[type] ?? mine.length), class: 'count' });
        const scale = h('button', { type: 'submit', id: `scale-button-${id}` }, `Scale ${type}`);
        const form = h('form', { class: 'inline', 'aria-label': `Scale ${type}` }, h('label', { for: `scale-${id}` }, `Number of ${type} processes`), count, scale);
        form.addEventListener('submit', (event) => {
          event.preventDefault();
          void ui.act(scale, async () => {
            await ui.api.scale(app, type, Number(count.value));
            await refresh();
            ui.done(`Scaled ${type} to ${count.value}.`);
          });
        });
        const restart = h('button', { type: 'button', id: `restart-${id}` }, `Restart ${type}`);
        restart.addEventListener('click', () => {
          void ui.act(restart, async () => {
            await ui.api.restart(app, type);
            await refresh();
            ui.done(`Restarted the ${type} processes.`);
          });
        });
        return h(
          'li',
          { class: 'type' },
          h('h3', {}, type),
          mine.length === 0
            ? h('p', {}, 'No container.')
            : h(
                'ul',
                { class: 'containers', 'aria-label': `${type} containers` },
                mine.map((c) => h('li', {}, h('span', { class: 'mono' }, `${c.type}.${c.num}`), ' ', h('span', { class: `state state-${c.state}` }, c.state), ' ', h('span', { class: 'meta' }, c.release))),
              ),
          form,
          restart,
        );
      }),
    ),
    restartAll,
  );
}
