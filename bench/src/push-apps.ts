/*
 * The apps the push benchmark pushes, one per language the built-in buildpacks build, each
 * with a dependency that needs no network (the Node.js app's express comes from the npm
 * registry, as a team's would): Python with a wheel in vendor/wheels (PIP_NO_INDEX), Go with a
 * vendored module, Ruby with its gem in vendor/cache. `write(dir, version)` writes the app
 * serving `hello <version>`; the second push changes the version only.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export type Language = 'node' | 'python' | 'go' | 'ruby';

export interface PushApp {
  language: Language;
  /** What the app has besides its code, as the push names it in the report. */
  what: string;
  /** Config vars set before the first push. */
  config: Record<string, string>;
  /** Writes every file of the app (the first time) or its code only (later), serving `hello <version>`. */
  write(dir: string, version: string, first: boolean): Promise<void>;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 }, (error, _stdout, stderr) => (error ? reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stderr}`)) : resolve()));
  });
}

async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), content);
  }
}

const PYTHON_APP = (version: string): string =>
  [
    'import http.server, os, svc_greeting',
    'class Hello(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    `        body = ('%s ${version}\\n' % svc_greeting.GREETING).encode()`,
    '        self.send_response(200)',
    "        self.send_header('content-length', str(len(body)))",
    '        self.end_headers()',
    '        self.wfile.write(body)',
    "http.server.HTTPServer(('', int(os.environ['PORT'])), Hello).serve_forever()",
    '',
  ].join('\n');

const GO_MAIN = (version: string): string =>
  `package main\n\nimport (\n\t"fmt"\n\t"net/http"\n\t"os"\n\n\t"example.com/greeting"\n)\n\nfunc main() {\n\thttp.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, greeting.Text+" ${version}") })\n\tpanic(http.ListenAndServe(":"+os.Getenv("PORT"), nil))\n}\n`;

const RUBY_APP = (version: string): string =>
  [
    "require 'socket'",
    "require 'svc_greeting'",
    "server = TCPServer.new('0.0.0.0', Integer(ENV.fetch('PORT')))",
    'loop do',
    '  client = server.accept',
    '  while (line = client.gets) && line != "\\r\\n"; end',
    `  body = "#{SvcGreeting::TEXT} ${version}\\n"`,
    '  client.write("HTTP/1.1 200 OK\\r\\ncontent-length: #{body.bytesize}\\r\\nconnection: close\\r\\n\\r\\n#{body}")',
    '  client.close',
    'end',
    '',
  ].join('\n');

/** The apps, for a checkout at `root` (the Python app's wheel is written by the tests' make-wheel.py). */
export function pushApps(root: string): PushApp[] {
  return [
    {
      language: 'node',
      what: 'express from the npm registry, lockfile',
      config: {},
      async write(dir, version, first) {
        await writeFile(join(dir, 'server.js'), `const express = require('express');\nconst app = express();\napp.get('/', (req, res) => res.send('hello ${version}\\n'));\napp.listen(process.env.PORT);\n`);
        if (!first) return;
        const manifest = { name: 'push-bench', version: '1.0.0', private: true, scripts: { start: 'node server.js' }, dependencies: { express: '^4.21.0' } };
        await writeFile(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
        await run('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund'], dir);
      },
    },
    {
      language: 'python',
      what: 'a wheel in vendor/wheels',
      config: { PIP_NO_INDEX: '1', PIP_FIND_LINKS: '/app/vendor/wheels' },
      async write(dir, version, first) {
        await writeFile(join(dir, 'app.py'), PYTHON_APP(version));
        if (!first) return;
        await writeFiles(dir, { 'requirements.txt': 'svc-greeting==1.0.0\n', Procfile: 'web: python app.py\n' });
        await mkdir(join(dir, 'vendor', 'wheels'), { recursive: true });
        const wheel = join(dir, 'vendor', 'wheels', 'svc_greeting-1.0.0-py3-none-any.whl');
        await run('python3', [join(root, 'packages', 'buildpacks-git', 'test', 'support', 'make-wheel.py'), wheel, 'svc-greeting', 'hello'], dir);
      },
    },
    {
      language: 'go',
      what: 'a vendored module',
      config: { GOPROXY: 'off' },
      async write(dir, version, first) {
        await writeFile(join(dir, 'main.go'), GO_MAIN(version));
        if (!first) return;
        await writeFiles(dir, {
          'go.mod': 'module example.com/hello\n\ngo 1.19\n\nrequire example.com/greeting v1.0.0\n',
          'vendor/modules.txt': '# example.com/greeting v1.0.0\n## explicit\nexample.com/greeting\n',
          'vendor/example.com/greeting/greeting.go': 'package greeting\n\nconst Text = "hello"\n',
        });
      },
    },
    {
      language: 'ruby',
      what: 'a gem in vendor/cache',
      config: {},
      async write(dir, version, first) {
        await writeFile(join(dir, 'app.rb'), RUBY_APP(version));
        if (!first) return;
        await writeFiles(dir, {
          Gemfile: 'source "https://rubygems.org"\n\ngem "svc_greeting"\n',
          'Gemfile.lock': 'GEM\n  remote: https://rubygems.org/\n  specs:\n    svc_greeting (1.0.0)\n\nPLATFORMS\n  ruby\n\nDEPENDENCIES\n  svc_greeting\n\nBUNDLED WITH\n   2.3.15\n',
          Procfile: 'web: bundle exec ruby app.rb\n',
        });
        const work = await mkdtemp(join(tmpdir(), 'svc-bench-gem-'));
        try {
          await writeFiles(work, {
            'lib/svc_greeting.rb': 'module SvcGreeting\n  TEXT = "hello"\nend\n',
            'svc_greeting.gemspec': 'Gem::Specification.new do |s|\n  s.name = "svc_greeting"\n  s.version = "1.0.0"\n  s.summary = "A greeting"\n  s.authors = ["svc bench"]\n  s.files = ["lib/svc_greeting.rb"]\n  s.license = "MIT"\nend\n',
          });
          await run('gem', ['build', 'svc_greeting.gemspec'], work, { PATH: '/usr/bin:/bin', HOME: work });
          await mkdir(join(dir, 'vendor', 'cache'), { recursive: true });
          await run('cp', [join(work, 'svc_greeting-1.0.0.gem'), join(dir, 'vendor', 'cache')], work);
        } finally {
          await rm(work, { recursive: true, force: true });
        }
      },
    },
  ];
}
