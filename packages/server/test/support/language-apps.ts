import { vendoredGemApp } from '../../../buildpacks-git/test/support/ruby-gems';

/*
 * The minimal app of each language the buildpacks e2e test pushes (docs/operations.md,
 * "Languages"), each serving its dependency's greeting.
 */

/** A Python app: svc-greeting from the test's package index, the virtualenv's name in its answer. */
export function pythonApp(): Record<string, string> {
  const appPy = [
    'import http.server, os, sys, svc_greeting',
    'class Hello(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    "        body = ('%s from %s\\n' % (svc_greeting.GREETING, os.path.basename(sys.prefix))).encode()",
    '        self.send_response(200)',
    "        self.send_header('content-length', str(len(body)))",
    '        self.end_headers()',
    '        self.wfile.write(body)',
    "http.server.HTTPServer(('', int(os.environ['PORT'])), Hello).serve_forever()",
    '',
  ].join('\n');
  return {
    'requirements.txt': 'svc-greeting==1.0.0\n',
    '.python-version': '3\n',
    Procfile: 'web: python app.py\n',
    'app.py': appPy,
  };
}

/** A Go module with its dependency vendored, one program (the web process). */
export function goApp(): Record<string, string> {
  return {
    'go.mod': 'module example.com/hello\n\ngo 1.19\n\nrequire example.com/greeting v1.0.0\n',
    'main.go': [
      'package main',
      '',
      'import (',
      '\t"fmt"',
      '\t"net/http"',
      '\t"os"',
      '',
      '\t"example.com/greeting"',
      ')',
      '',
      'func main() {',
      '\thttp.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, greeting.Text) })',
      '\tpanic(http.ListenAndServe(":"+os.Getenv("PORT"), nil))',
      '}',
      '',
    ].join('\n'),
    'vendor/modules.txt': '# example.com/greeting v1.0.0\n## explicit\nexample.com/greeting\n',
    'vendor/example.com/greeting/greeting.go': 'package greeting\n\nconst Text = "hello from a vendored Go module"\n',
  };
}

/** A Ruby app with its gem in vendor/cache, run under bundle exec, its RACK_ENV in its answer. */
export async function rubyApp(): Promise<Record<string, Buffer | string>> {
  const appRb = [
    "require 'socket'",
    "require 'svc_greeting'",
    "server = TCPServer.new('0.0.0.0', Integer(ENV.fetch('PORT')))",
    'loop do',
    '  client = server.accept',
    '  while (line = client.gets) && line != "\\r\\n"; end',
    '  body = "#{SvcGreeting::TEXT} in #{ENV.fetch(\'RACK_ENV\')}\\n"',
    '  client.write("HTTP/1.1 200 OK\\r\\ncontent-length: #{body.bytesize}\\r\\nconnection: close\\r\\n\\r\\n#{body}")',
    '  client.close',
    'end',
    '',
  ].join('\n');
  return {
    ...(await vendoredGemApp('hello from a vendored gem')),
    Procfile: 'web: bundle exec ruby app.rb\n',
    'app.rb': appRb,
  };
}
