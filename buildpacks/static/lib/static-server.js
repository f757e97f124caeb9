'use strict';
/*
 * The static site buildpack's web process: serves the files of one directory over HTTP on
 * PORT, with the stack's node and nothing of the app's code.
 *
 *   node .svc/static-server.js SITE_DIR
 *
 * - GET and HEAD only (405 otherwise); a directory answers with its index.html, a path
 *   without one with 404 (the site's own 404.html when it has one).
 * - Only what is inside SITE_DIR: `..`, encoded or not, a NUL and a symbolic link that leads
 *   out of it answer 404; so does every name starting with a dot (.git, .env, .svc/…).
 * - Caching: every answer has an ETag (size and modification time) and Last-Modified, and a
 *   matching If-None-Match (or If-Modified-Since) answers 304. HTML is revalidated on each
 *   use (`no-cache`), so a deploy shows at once; other files are kept an hour, and for a
 *   year (`immutable`) when their name holds a content hash (`app.3f9a1c2b.js`).
 */
const { createReadStream } = require('node:fs');
const { realpath, stat } = require('node:fs/promises');
const { createServer } = require('node:http');
const { extname, join, resolve, sep } = require('node:path');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.wasm': 'application/wasm',
  '.pdf': 'application/pdf',
  '.webmanifest': 'application/manifest+json',
};

const HTML = /^\.html?$/;
const HASHED = /\.[0-9a-f]{8,}\.[a-z0-9]+$/i;

/** The Cache-Control of a file by its name. */
function cacheControl(path) {
  const extension = extname(path).toLowerCase();
  if (HTML.test(extension)) return 'no-cache';
  if (HASHED.test(path)) return 'public, max-age=31536000, immutable';
  return 'public, max-age=3600';
}

/** The path under `root` a request's URL path names, or null for one it may not reach. */
function localPath(root, urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (!decoded.startsWith('/') || decoded.includes('\0') || decoded.includes('\\')) return null;
  const parts = decoded.split('/').filter((part) => part !== '');
  if (parts.some((part) => part.startsWith('.'))) return null;
  return join(root, ...parts);
}

/** The file a path answers with (a directory's index.html), or null; never outside `realRoot`. */
async function fileAt(realRoot, path) {
  let real;
  try {
    real = await realpath(path);
  } catch {
    return null;
  }
  if (real !== realRoot && !real.startsWith(realRoot + sep)) return null;
  const info = await stat(real).catch(() => null);
  if (info === null) return null;
  if (info.isDirectory()) return fileAt(realRoot, join(real, 'index.html'));
  return info.isFile() ? { path: real, info } : null;
}

function send(req, res, status, file) {
  const etag = `W/"${file.info.size.toString(16)}-${Math.floor(file.info.mtimeMs).toString(16)}"`;
  const headers = {
    'Content-Type': TYPES[extname(file.path).toLowerCase()] || 'application/octet-stream',
    'Cache-Control': cacheControl(file.path),
    ETag: etag,
    'Last-Modified': file.info.mtime.toUTCString(),
    'X-Content-Type-Options': 'nosniff',
  };
  const tags = req.headers['if-none-match'];
  const since = Date.parse(req.headers['if-modified-since'] || '');
  const fresh = tags !== undefined ? tags.split(',').some((tag) => tag.trim() === etag || tag.trim() === '*') : Number.isFinite(since) && Math.floor(file.info.mtimeMs / 1000) * 1000 <= since;
  if (status === 200 && fresh) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  res.writeHead(status, { ...headers, 'Content-Length': file.info.size });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const stream = createReadStream(file.path);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}

function plain(res, status, text) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' });
  res.end(`${text}\n`);
}

async function answer(realRoot, req, res) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    plain(res, 405, 'Method Not Allowed');
    return;
  }
  const urlPath = (req.url || '/').split('?')[0].split('#')[0];
  const path = localPath(realRoot, urlPath);
  const file = path === null ? null : await fileAt(realRoot, path);
  if (file !== null) {
    send(req, res, 200, file);
    return;
  }
  const notFound = await fileAt(realRoot, join(realRoot, '404.html'));
  if (notFound !== null) send(req, res, 404, notFound);
  else plain(res, 404, 'Not Found');
}

async function main() {
  const site = process.argv[2] || '.';
  const port = Number(process.env.PORT);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`static-server: PORT must be a port number, not "${process.env.PORT || ''}"\n`);
    process.exit(1);
  }
  const realRoot = await realpath(resolve(site));
  const server = createServer((req, res) => {
    answer(realRoot, req, res).catch(() => {
      if (!res.headersSent) plain(res, 500, 'Internal Server Error');
      else res.destroy();
    });
  });
  server.listen(port, () => process.stdout.write(`static-server: serving ${site === '.' ? 'the app' : `${site}/`} on port ${port}\n`));
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error) => {
  process.stderr.write(`static-server: ${error.message}\n`);
  process.exit(1);
});
