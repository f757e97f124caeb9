import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The client's own version (printed by `svc --version`, sent in User-Agent): its package's,
 * read from package.json beside `src/` and `dist/` alike, so the two cannot differ.
 */
export const VERSION: string = (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
