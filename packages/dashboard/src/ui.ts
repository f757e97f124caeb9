import { ApiError, type Api } from './api.js';
import { replace } from './dom.js';

/** What every view is given: the API with the user's token, and the page's message line. */
export interface Ui {
  readonly api: Api;
  readonly username: string;
  /** Shows an error (the API's detail) in the alert line at the top of the page. */
  error(error: unknown): void;
  /** Shows what an action did, in the status line. */
  done(message: string): void;
  /** Runs an action of a control: disabled meanwhile, its error shown, never thrown. Resolves true when it succeeded. */
  act(control: HTMLButtonElement | null, action: () => Promise<void>): Promise<boolean>;
  /** Forgets the token: back to the sign-in form. */
  signOut(): void;
}

/** The text of any failure: the API's detail, or the error's message. */
export function describe(error: unknown): string {
  if (error instanceof ApiError) return error.detail;
  return error instanceof Error ? error.message : String(error);
}

/** The message lines of the page: `alert` for errors (announced at once), `status` for outcomes. */
export function messageLines(alert: HTMLElement, status: HTMLElement): Pick<Ui, 'error' | 'done'> {
  return {
    error(error) {
      replace(status);
      replace(alert, describe(error));
      alert.hidden = false;
    },
    done(message) {
      replace(alert);
      alert.hidden = true;
      replace(status, message);
    },
  };
}
