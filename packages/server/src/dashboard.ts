import { dirname, join } from 'node:path';

/**
 * Where the dashboard's built files are: the `public` directory of the `@svc/dashboard`
 * package (its scripts are compiled there by `npm run build`). The server reads files from
 * it and imports nothing of the dashboard.
 */
export function dashboardDirectory(): string {
  return join(dirname(require.resolve('@svc/dashboard/package.json')), 'public');
}
