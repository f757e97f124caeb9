import { existsSync } from 'node:fs';
import { join } from 'node:path';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { HttpError } from './http-error';
import { SECURITY_HEADERS } from './security';

const API_CSP = SECURITY_HEADERS['Content-Security-Policy'] as string;

/** Where the dashboard's pages are served, on the API's own origin. */
export const DASHBOARD_PATH = '/dashboard';

/**
 * The Content-Security-Policy of the dashboard's files: its own scripts, styles and images
 * only, no inline script or style, no eval, API calls to this origin only, no framing, no
 * form posted anywhere (the forms are handled by script).
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Serves the dashboard's built files from `directory` under {@link DASHBOARD_PATH} (GET and
 * HEAD; `/dashboard` redirects to `/dashboard/`), with {@link DASHBOARD_CSP}. Until the
 * dashboard is built (`npm run build`), its address answers 503 saying so. Other methods and
 * unknown files fall through to the API, which answers 404.
 */
export function dashboardFiles(directory: string): RequestHandler {
  const files = express.static(directory, { index: 'index.html', dotfiles: 'ignore', redirect: true, etag: false, lastModified: false });
  const built = (): boolean => existsSync(join(directory, 'index.html')) && existsSync(join(directory, 'js', 'main.js'));
  return (req: Request, res: Response, next: NextFunction): void => {
    const path = req.path;
    if ((req.method !== 'GET' && req.method !== 'HEAD') || (path !== DASHBOARD_PATH && !path.startsWith(`${DASHBOARD_PATH}/`))) {
      next();
      return;
    }
    if (!built()) {
      next(new HttpError(503, 'The dashboard is not built: run npm run build.'));
      return;
    }
    if (path === DASHBOARD_PATH) {
      res.redirect(301, `${DASHBOARD_PATH}/`);
      return;
    }
    res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
    // The files are looked up relative to the mount point, as express.static expects.
    const original = req.url;
    req.url = req.url.slice(DASHBOARD_PATH.length);
    files(req, res, (error?: unknown) => {
      // Not a file of the dashboard: the API answers, with its own policy.
      req.url = original;
      res.setHeader('Content-Security-Policy', API_CSP);
      next(error);
    });
  };
}
