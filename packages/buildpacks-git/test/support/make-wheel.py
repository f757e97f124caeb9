"""Writes a pure-Python wheel: python3 make-wheel.py OUT PROJECT GREETING

The package PROJECT 1.0.0 with one module (PROJECT with '-' as '_') whose GREETING is the
given text; a wheel is a zip file with its metadata (the standard library writes it). Used by
the tests' package index (python-index.ts) and the push benchmark (bench/src/push-apps.ts).
"""
import base64, hashlib, sys, zipfile
out, project, greeting = sys.argv[1:4]
module = project.replace('-', '_')
info = '%s-1.0.0.dist-info' % module
files = {
    module + '.py': 'GREETING = %r\n' % greeting,
    info + '/METADATA': 'Metadata-Version: 2.1\nName: %s\nVersion: 1.0.0\n' % project,
    info + '/WHEEL': 'Wheel-Version: 1.0\nGenerator: svc-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
}
record = []
with zipfile.ZipFile(out, 'w') as wheel:
    for name, text in files.items():
        data = text.encode()
        wheel.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
        record.append('%s,sha256=%s,%d' % (name, digest, len(data)))
    record.append(info + '/RECORD,,')
    wheel.writestr(info + '/RECORD', '\n'.join(record) + '\n')
