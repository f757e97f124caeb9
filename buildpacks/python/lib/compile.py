"""Python buildpack, compile step: python3 compile.py BUILD_DIR CACHE_DIR ENV_DIR

Run by bin/compile with the stack's Python 3 (the standard library only):

1. The version the app asks for (.python-version, else runtime.txt) is checked against the
   stack's Python: a stack has one Python, so an app asking for another is refused, saying
   which it has.
2. A virtualenv in BUILD_DIR/.venv (kept in the slug) gets the app's dependencies with pip:
   `pip install -r requirements.txt`, or `pip install .` for a pyproject.toml alone. pip's
   cache is in CACHE_DIR/pip; the installed virtualenv is kept in CACHE_DIR/python with the
   hash of what decided it (the dependency files and the stack's Python) and copied back while
   that hash holds, instead of installing again.
3. BUILD_DIR/.profile.d/python.sh puts the virtualenv's bin first on PATH for every process
   (the platform sources .profile.d/*.sh before each process command, as Heroku does).

Each file of ENV_DIR is a config var, given to pip (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL,
PIP_TRUSTED_HOST for an internal index), except those that would send the install outside
the virtualenv or change the interpreter; values are never printed.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys

SKIPPED = {
    'PATH', 'HOME', 'IFS', 'CDPATH', 'ENV', 'SHELL', 'BUILD_DIR', 'CACHE_DIR', 'ENV_DIR',
    'PYTHONHOME', 'VIRTUAL_ENV', 'PIP_CACHE_DIR', 'PIP_TARGET', 'PIP_PREFIX', 'PIP_ROOT', 'PIP_USER',
    'PIP_REQUIRE_VIRTUALENV', 'PIP_NO_INPUT',
}
NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
VERSION = re.compile(r'^(?:python-)?(\d+)(?:\.(\d+))?(?:\.(\d+))?$')


def step(message):
    print('-----> ' + message, flush=True)


def detail(message):
    print('       ' + message, flush=True)


def fail(message):
    print(' !     ' + message, file=sys.stderr, flush=True)
    sys.exit(1)


def config_env(env_dir):
    """The process environment for pip: this one plus the app's config vars."""
    env = dict(os.environ)
    if not os.path.isdir(env_dir):
        return env
    skipped = 0
    for name in sorted(os.listdir(env_dir)):
        path = os.path.join(env_dir, name)
        if not os.path.isfile(path):
            continue
        if not NAME.match(name):
            skipped += 1
            continue
        if name in SKIPPED or name.startswith('LD_') or name.startswith('bp_'):
            continue
        with open(path, encoding='utf-8', errors='replace') as f:
            env[name] = f.read().rstrip('\n')  # as the shell's $(cat file)
    if skipped:
        detail('Skipped %d config file(s) whose names are not variable names' % skipped)
    return env


def wanted_version(build):
    """(version parts, file) the app asks for, or (None, None)."""
    for name in ('.python-version', 'runtime.txt'):
        path = os.path.join(build, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding='utf-8', errors='replace') as f:
            lines = [line.strip() for line in f.read().splitlines()]
        lines = [line for line in lines if line and not line.startswith('#')]
        text = lines[0] if lines else ''
        match = VERSION.match(text)
        if not match:
            fail('%s asks for "%s", which is not a Python version (write one such as %d.%d)' % (name, text[:40], sys.version_info[0], sys.version_info[1]))
        return [int(part) for part in match.groups() if part is not None], name
    return None, None


def check_version(build):
    stack = list(sys.version_info[:3])
    shown = '.'.join(str(part) for part in stack)
    wanted, source = wanted_version(build)
    if wanted is None:
        detail('Using the stack\'s Python %s (pin it with a .python-version file)' % shown)
        return shown
    asked = '.'.join(str(part) for part in wanted)
    if stack[:len(wanted)] != wanted:
        fail('This app asks for Python %s (%s); this stack has Python %s. Ask for %d.%d in %s, or build on a stack with Python %s.'
             % (asked, source, shown, stack[0], stack[1], source, asked))
    detail('Python %s (%s asks for %s)' % (shown, source, asked))
    return shown


def run_indented(command, cwd, env):
    """Runs a command with its output as detail lines; its exit status."""
    child = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    for raw in child.stdout:
        line = raw.decode('utf-8', errors='replace').rstrip('\n')
        print('       ' + line if line else '', flush=True)
    return child.wait()


def inputs_key(build, version):
    digest = hashlib.sha256()
    digest.update(('python %s %s\n' % (version, os.path.realpath(sys.executable))).encode())
    for name in ('requirements.txt', 'pyproject.toml', 'setup.cfg', 'setup.py'):
        path = os.path.join(build, name)
        if os.path.isfile(path):
            digest.update(('%s\n' % name).encode())
            with open(path, 'rb') as f:
                digest.update(f.read())
    return digest.hexdigest()


def main():
    if len(sys.argv) != 4 or not os.path.isdir(sys.argv[1]):
        fail('usage: bin/compile BUILD_DIR CACHE_DIR ENV_DIR')
    build = os.path.realpath(sys.argv[1])
    cache = os.path.realpath(sys.argv[2])
    os.makedirs(cache, exist_ok=True)
    step('Python app detected')
    env = config_env(sys.argv[3])
    version = check_version(build)

    venv = os.path.join(build, '.venv')
    if os.path.lexists(venv):
        detail('.venv is in the pushed files: it is replaced by an install')
        if os.path.isdir(venv) and not os.path.islink(venv):
            shutil.rmtree(venv)
        else:
            os.remove(venv)

    env.update({
        'PIP_CACHE_DIR': os.path.join(cache, 'pip'),
        'PIP_DISABLE_PIP_VERSION_CHECK': '1',
        'PIP_NO_INPUT': '1',
        'PIP_PROGRESS_BAR': 'off',
    })
    if not os.access(env.get('HOME') or '/nonexistent', os.W_OK):
        env['HOME'] = os.path.join(cache, 'home')
        os.makedirs(env['HOME'], exist_ok=True)

    saved = os.path.join(cache, 'python')
    saved_venv = os.path.join(saved, 'venv')
    saved_inputs = os.path.join(saved, 'inputs')
    key = inputs_key(build, version)
    previous = ''
    if os.path.isfile(saved_inputs):
        with open(saved_inputs, encoding='utf-8') as f:
            previous = f.read().strip()

    step('Installing dependencies')
    if previous == key and os.path.isdir(saved_venv):
        detail('Restoring the virtualenv from the build cache (dependency files and Python unchanged)')
        shutil.copytree(saved_venv, venv, symlinks=True)
    else:
        # The saved copy is stale: dropped before installing, so the cache never holds two.
        if os.path.exists(saved_inputs):
            os.remove(saved_inputs)
        shutil.rmtree(saved_venv, ignore_errors=True)
        if run_indented([sys.executable, '-m', 'venv', venv], build, env) != 0:
            fail('The virtualenv could not be made: the stack\'s Python needs venv and ensurepip (Debian: python3-venv)')
        pip = [os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'install']
        if os.path.isfile(os.path.join(build, 'requirements.txt')):
            detail('Running pip install -r requirements.txt')
            command = pip + ['-r', 'requirements.txt']
        else:
            detail('No requirements.txt: running pip install . (pyproject.toml)')
            command = pip + ['.']
        if run_indented(command, build, env) != 0:
            fail('pip install failed')
        try:
            os.makedirs(saved, exist_ok=True)
            shutil.copytree(venv, saved_venv, symlinks=True)
            with open(saved_inputs, 'w', encoding='utf-8') as f:
                f.write(key + '\n')
            detail('Saved the virtualenv in the build cache')
        except OSError as error:
            shutil.rmtree(saved_venv, ignore_errors=True)
            detail('The virtualenv could not be saved in the build cache (%s); the next build installs again' % error.strerror)

    profile = os.path.join(build, '.profile.d')
    os.makedirs(profile, exist_ok=True)
    with open(os.path.join(profile, 'python.sh'), 'w', encoding='utf-8') as f:
        f.write('# Written by the Python buildpack: the app\'s virtualenv first on PATH.\n'
                'export VIRTUAL_ENV=%s\nexport PATH="$VIRTUAL_ENV/bin:$PATH"\n'
                'export PYTHONUNBUFFERED="${PYTHONUNBUFFERED:-1}"\n' % shell_quote(venv))
    step('Build succeeded')


def shell_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


if __name__ == '__main__':
    main()
