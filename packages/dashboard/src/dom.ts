/** What an element may hold: nodes, text, and nothing for conditional parts. */
export type Child = Node | string | number | null | undefined | false;

type Attributes = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

/**
 * Makes an element. Attributes named `on<event>` add listeners; `true` sets a boolean
 * attribute and `false`, `null` or `undefined` leaves it out. Text is always set as text,
 * never parsed as HTML.
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Array<Child | Child[]>): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

/** Adds children (nested lists flattened, empty ones skipped). */
export function append(parent: Node, children: Array<Child | Child[]>): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

/** Replaces an element's children, keeping focus on the control with the same id when there is one. */
export function replace(parent: Element, ...children: Array<Child | Child[]>): void {
  const active = document.activeElement;
  const focusedId = active !== null && parent.contains(active) && active.id !== '' ? active.id : null;
  parent.replaceChildren();
  append(parent, children);
  if (focusedId !== null) {
    const again = document.getElementById(focusedId);
    if (again instanceof HTMLElement) again.focus();
  }
}

/** A label and its input, joined by id. */
export function field(id: string, label: string, input: HTMLInputElement | HTMLTextAreaElement): HTMLElement {
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), input);
}

/** A safe id fragment of any text (app ids, process types, config keys, domains). */
export function idOf(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0).toString(16)}`);
}

/** The time of an API timestamp (`2026-11-21T10:00:00UTC`) as the page shows it. */
export function time(stamp: string): HTMLTimeElement {
  const iso = stamp.replace(/UTC$/, 'Z');
  return h('time', { datetime: iso }, stamp.replace('T', ' ').replace(/UTC$/, ' UTC'));
}
