import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The host's Ruby and bundler, which the process scheduler's sandbox runs (Debian's). */
export const HOST_RUBY = '/usr/bin/ruby';

/**
 * A Ruby app whose one gem, `svc_greeting` 1.0.0 (its SvcGreeting::TEXT is `text`), is in
 * vendor/cache, built here with the host's `gem build`: the files of the app (binary .gem
 * included), with its Gemfile and Gemfile.lock, to write or commit.
 */
export async function vendoredGemApp(text: string): Promise<Record<string, Buffer | string>> {
  const work = await mkdtemp(join(tmpdir(), 'svc-gem-'));
  try {
    await mkdir(join(work, 'lib'));
    await writeFile(join(work, 'lib', 'svc_greeting.rb'), `module SvcGreeting\n  TEXT = ${JSON.stringify(text)}\nend\n`);
    await writeFile(
      join(work, 'svc_greeting.gemspec'),
      'Gem::Specification.new do |s|\n  s.name = "svc_greeting"\n  s.version = "1.0.0"\n  s.summary = "A greeting"\n  s.authors = ["svc tests"]\n  s.files = ["lib/svc_greeting.rb"]\n  s.license = "MIT"\nend\n',
    );
    await new Promise<void>((resolve, reject) => {
      execFile('gem', ['build', 'svc_greeting.gemspec'], { cwd: work, timeout: 60_000, env: { PATH: '/usr/bin:/bin', HOME: work } }, (error, _stdout, stderr) =>
        error ? reject(new Error(`gem build: ${error.message}\n${stderr}`)) : resolve(),
      );
    });
    return {
      Gemfile: 'source "https://rubygems.org"\n\ngem "svc_greeting"\n',
      'Gemfile.lock': 'GEM\n  remote: https://rubygems.org/\n  specs:\n    svc_greeting (1.0.0)\n\nPLATFORMS\n  ruby\n\nDEPENDENCIES\n  svc_greeting\n\nBUNDLED WITH\n   2.3.15\n',
      'vendor/cache/svc_greeting-1.0.0.gem': await readFile(join(work, 'svc_greeting-1.0.0.gem')),
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
