import { Api } from '../api.js';
import { field, h } from '../dom.js';
import { describe } from '../ui.js';

/** The sign-in form: `Username`, `Password`, `Log in`; calls `signedIn` with the new token. */
export function loginView(signedIn: (token: string, username: string) => void): HTMLElement {
  const username = h('input', { name: 'username', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const error = h('p', { class: 'error', role: 'alert', id: 'login-error' });
  const button = h('button', { type: 'submit' }, 'Log in');
  const form = h(
    'form',
    { class: 'login', 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title', tabindex: '-1' }, 'Sign in'),
    h('p', {}, 'Sign in with your platform account (the same as for the svc command-line client).'),
    field('login-username', 'Username', username),
    field('login-password', 'Password', password),
    error,
    button,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    button.disabled = true;
    error.textContent = '';
    Api.login(username.value, password.value)
      .then((token) => signedIn(token, username.value))
      .catch((failure: unknown) => {
        error.textContent = describe(failure);
        password.select();
        password.focus();
      })
      .finally(() => {
        button.disabled = false;
      });
  });
  return form;
}
