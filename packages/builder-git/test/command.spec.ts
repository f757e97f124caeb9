import { parseGitCommand } from '@svc/builder-git';

describe('parseGitCommand', () => {
  it.each([
    ["git-receive-pack '/myapp.git'", 'git-receive-pack', 'myapp'],
    ["git-receive-pack 'myapp.git'", 'git-receive-pack', 'myapp'],
    ["git-upload-pack '/myapp'", 'git-upload-pack', 'myapp'],
    ['git-upload-pack "my-app-2.git/"', 'git-upload-pack', 'my-app-2'],
    ['git upload-pack /myapp.git', 'git-upload-pack', 'myapp'],
    ["  git-receive-pack   'myapp.git'  ", 'git-receive-pack', 'myapp'],
  ])('understands %p as %s of %s', (command, service, appId) => {
    expect(parseGitCommand(command)).toEqual({ ok: true, service, appId });
  });

  it.each([
    'ls',
    "git-upload-archive 'myapp.git'",
    "git-receive-pack 'myapp.git'; rm -rf /",
    "git-receive-pack 'a' 'b'",
    'scp -t /tmp',
    '',
  ])('refuses the command %p', (command) => {
    const result = parseGitCommand(command);

    expect(result.ok).toBe(false);
    expect(result).toHaveProperty('message', expect.stringMatching(/is not allowed: this server only accepts git push, git fetch and git clone/));
  });

  it.each(["'../etc/passwd'", "'/a/b.git'", "'MyApp.git'", "'.git'", "'-app.git'", `'${'a'.repeat(64)}.git'`, "'~alice/app.git'"])(
    'refuses the repository %s, which names no app',
    (path) => {
      const result = parseGitCommand(`git-receive-pack ${path}`);

      expect(result).toEqual({ ok: false, message: expect.stringMatching(/is not an app's repository: use <app>\.git/) });
    },
  );

  it('does not echo control characters back', () => {
    const result = parseGitCommand('echo \u001b[31mred');

    expect(result).toEqual({ ok: false, message: expect.not.stringContaining('\u001b') });
  });
});
