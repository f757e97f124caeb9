#!/usr/bin/env node
'use strict';
// The installed `svc` command. It runs the compiled client; in a checkout of the repository
// that means `npm run build` first.
try {
  require.resolve('../dist/main.js');
} catch {
  process.stderr.write('svc: the client is not built yet: run `npm run build` in the repository first.\n');
  process.exit(1);
}
require('../dist/main.js').runAsCommand();
