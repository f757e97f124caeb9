import { Api, ApiError } from './api.js';
import { h, replace } from './dom.js';
import { parseRoute } from './format.js';
import { messageLines, type Ui } from './ui.js';
import { appView } from './views/app.js';
import { appsView } from './views/apps.js';
import { loginView } from './views/login.js';

/*
 * The dashboard's entry point. The token lives in sessionStorage (this tab only, gone when it
 * closes), never in a cookie: the API accepts it only in the Authorization header, so no
 * other page can make a signed-in browser act.
 */

const TOKEN_KEY = 'svc.token';
const USER_KEY = 'svc.username';

const main = document.getElementById('main') as HTMLElement;
const account = document.getElementById('account') as HTMLElement;
const alert = document.getElementById('alert') as HTMLElement;
const status = document.getElementById('status') as HTMLElement;
const lines = messageLines(alert, status);
let stopPage: () => void = () => undefined;

function navigate(hash: string): void {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function signOut(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(USER_KEY);
  lines.done('Signed out.');
  render();
}

/** Focuses the element with this id, or else the heading of this section, when focus was lost. */
function restoreFocus(id: string, section: string): void {
  const active = document.activeElement;
  if (active !== null && active !== document.body && active.isConnected) return;
  const target = (id === '' ? null : document.getElementById(id)) ?? document.getElementById(`${section}-title`);
  if (target instanceof HTMLElement) target.focus();
}

function session(token: string, username: string): Ui {
  return {
    api: new Api(token),
    username,
    ...lines,
    signOut,
    async act(control, action) {
      // A disabled control loses focus: it is given back afterwards (to the control drawn
      // again with the same id, or to its section's heading), so keyboard use goes on.
      const id = control?.id ?? '';
      const section = control?.closest('section')?.id ?? '';
      if (control !== null) control.disabled = true;
      try {
        await action();
        return true;
      } catch (error) {
        // A token that no longer works (revoked, expired) sends the user back to the sign-in form.
        if (error instanceof ApiError && error.status === 401) signOut();
        lines.error(error);
        return false;
      } finally {
        if (control !== null && control.isConnected) control.disabled = false;
        restoreFocus(id, section);
      }
    },
  };
}

/** Draws the page for the current route: the sign-in form without a token. */
function render(): void {
  // An error belongs to the page it happened on; the status line (what was just done) stays.
  replace(alert);
  alert.hidden = true;
  stopPage();
  stopPage = () => undefined;
  const token = sessionStorage.getItem(TOKEN_KEY);
  const username = sessionStorage.getItem(USER_KEY) ?? '';
  if (token === null) {
    replace(account);
    replace(main, loginView((newToken, name) => {
      sessionStorage.setItem(TOKEN_KEY, newToken);
      sessionStorage.setItem(USER_KEY, name);
      lines.done(`Signed in as ${name}.`);
      if (parseRoute(location.hash).page === 'apps') navigate('#/apps');
      else render();
    }));
    document.getElementById('login-username')?.focus();
    return;
  }
  const ui = session(token, username);
  const out = h('button', { type: 'button', id: 'sign-out' }, 'Log out');
  out.addEventListener('click', signOut);
  replace(account, h('span', {}, username), ' ', out);
  const route = parseRoute(location.hash);
  if (route.page === 'app') {
    const page = appView(ui, route.app, navigate);
    stopPage = page.stop;
    replace(main, page.element);
  } else {
    replace(main, appsView(ui, navigate));
  }
  document.getElementById('page-title')?.focus();
}

// The skip link moves focus without touching the hash, which holds the route.
document.querySelector('.skip')?.addEventListener('click', (event) => {
  event.preventDefault();
  main.focus();
});
window.addEventListener('hashchange', render);
render();
