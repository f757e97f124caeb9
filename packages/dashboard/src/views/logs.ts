import { ApiError, type Api } from '../api.js';
import { h } from '../dom.js';
import { atBottom } from '../format.js';
import { describe } from '../ui.js';

/** Lines kept on the page; older ones are dropped from the top. */
const MAX_LINES = 2000;
/** Wait before following again after the stream ended or failed. */
const RETRY_MS = 2000;

/**
 * The live log of an app in a box of fixed height (the page never moves as lines arrive),
 * named `Logs`. It follows the API's follow mode and keeps the newest line in view, unless
 * the reader scrolled up: then it pauses (lines are still received and counted) until they
 * scroll back to the bottom or press `Follow new lines`. Returns the panel and a stop function.
 */
export function logsPanel(api: Api, app: string): { element: HTMLElement; stop: () => void } {
  // The heading names the box itself, so that `Logs` names one thing on the page.
  const title = h('h2', { id: 'logs-title' }, 'Logs');
  const box = h('div', { class: 'logs', role: 'log', 'aria-labelledby': 'logs-title', tabindex: '0', 'aria-live': 'off' });
  const state = h('span', { class: 'log-state', 'aria-live': 'polite' }, 'Connecting…');
  const resume = h('button', { type: 'button', id: 'logs-resume', class: 'link', hidden: true }, 'Follow new lines');
  let paused = false;
  let unseen = 0;
  const controller = new AbortController();

  const showState = (): void => {
    resume.hidden = !paused;
    state.textContent = paused ? `Paused: ${unseen} new line${unseen === 1 ? '' : 's'} below.` : 'Following.';
  };
  // Where following last put the box: a scroll event that finds the box below its bottom
  // because a line arrived meanwhile is not the reader scrolling up.
  let followedTop = 0;
  const toBottom = (): void => {
    box.scrollTop = box.scrollHeight;
    followedTop = box.scrollTop;
  };
  box.addEventListener('scroll', () => {
    if (paused && atBottom(box.scrollTop, box.clientHeight, box.scrollHeight)) {
      paused = false;
      unseen = 0;
      showState();
    } else if (!paused && box.scrollTop < followedTop - 1) {
      paused = true;
      showState();
    }
  });
  resume.addEventListener('click', () => {
    paused = false;
    unseen = 0;
    toBottom();
    showState();
    box.focus();
  });

  const add = (line: string): void => {
    box.appendChild(h('div', { class: 'line' }, line));
    while (box.childElementCount > MAX_LINES) box.firstElementChild?.remove();
    if (paused) {
      unseen += 1;
      showState();
    } else {
      toBottom();
    }
  };
  const follow = async (): Promise<void> => {
    while (!controller.signal.aborted) {
      try {
        showState();
        box.replaceChildren();
        await api.followLogs(app, controller.signal, add);
      } catch (error) {
        if (controller.signal.aborted) return;
        // Asking again cannot help a refusal (no such app, no right); a full quota or an outage can pass.
        if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429) {
          state.textContent = `The log cannot be followed: ${error.detail}`;
          return;
        }
        state.textContent = `The log stream stopped: ${describe(error)} Retrying…`;
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  };
  void follow();

  const element = h('section', { id: 'logs', class: 'logs-panel' }, title, box, h('p', { class: 'log-bar' }, state, ' ', resume));
  return { element, stop: () => controller.abort() };
}
