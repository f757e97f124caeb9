// A mirror of better-sqlite3's prebuilt binary on loopback, as a company's offline mirror of
// prebuilt binaries serves it. better-sqlite3's install script (prebuild-install) downloads
//   <host>/v<version>/better-sqlite3-v<version>-node-v<abi>-<platform>-<arch>.tar.gz
// (a tarball holding build/Release/better_sqlite3.node) when npm_config_better_sqlite3_binary_host
// names the host, and compiles from source (about 80 s of a core) when nothing answers.
//
//   node scripts/prebuild-mirror.mjs pack DIR    puts the binary this checkout's install made
//                                                into DIR under that name (prints the name)
//   node scripts/prebuild-mirror.mjs serve DIR   serves DIR's files on a free port of 127.0.0.1,
//                                                prints the host URL, appends each path asked
//                                                for to DIR/requests.log, runs until killed
//
// `.ci/run` keeps the binary between runs this way (SVC_CI_PREBUILDS), and the embedding test
// (packages/server/test/embed-packages.int.spec.ts) installs the packed tarballs with it.
import { spawnSync } from 'node:child_process';
import { appendFileSync, copyFileSync, createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGE = join(ROOT, 'node_modules', 'better-sqlite3');

/** The name prebuild-install asks for, for this Node.js and the installed better-sqlite3. */
function prebuildName() {
  const { version } = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'));
  return { version, file: `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz` };
}

function pack(dir) {
  const { file } = prebuildName();
  const binary = join(PACKAGE, 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run npm ci first`);
  mkdirSync(dir, { recursive: true });
  const staging = mkdtempSync(join(dir, '.staging-'));
  try {
    mkdirSync(join(staging, 'build', 'Release'), { recursive: true });
    copyFileSync(binary, join(staging, 'build', 'Release', 'better_sqlite3.node'));
    const tar = spawnSync('tar', ['-czf', join(staging, file), '-C', staging, 'build'], { encoding: 'utf8' });
    if (tar.status !== 0) throw new Error(`tar failed: ${tar.stderr}`);
    renameSync(join(staging, file), join(dir, file));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  console.log(file);
}

function serve(dir) {
  createServer((req, res) => {
    appendFileSync(join(dir, 'requests.log'), `${req.url}\n`);
    const file = join(dir, basename(req.url ?? ''));
    if (!file.endsWith('.tar.gz') || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/gzip' });
    createReadStream(file).pipe(res);
  }).listen(0, '127.0.0.1', function listening() {
    console.log(`http://127.0.0.1:${this.address().port}`);
  });
}

const [command, dir] = process.argv.slice(2);
if (command === 'pack' && dir) pack(dir);
else if (command === 'serve' && dir) serve(dir);
else if (command !== undefined || dir !== undefined) {
  console.error('usage: node scripts/prebuild-mirror.mjs pack|serve DIR');
  process.exit(2);
}
