// Embedding the controller's core in a Node.js program: every use case built with this
// repository's adapters on the embedded SQLite database, then a few of them driven by hand.
// Walked through in docs/embedding.md.
//
//   npm ci
//   npx tsc -b examples/embed            # compiles the packages it uses, then this file
//   node examples/embed/dist/main.js [DATA_DIR]
//
// The @svc/* packages resolve as in any other project: through node_modules to each
// package's compiled `dist/` (its package.json `main` and `types`).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SETTINGS, DomainError, createUseCases, type CoreDependencies } from '@svc/core';
import { createDatabase } from '@svc/persistence-typeorm';
import {
  AesGcmSecretBox,
  CryptoRandomSource,
  RandomIdGenerator,
  RandomTokenGenerator,
  ScryptPasswordHasher,
  SystemClock,
  SystemTimer,
  generateSecretKey,
} from '@svc/crypto-node';
import { Ssh2PublicKeyParser } from '@svc/ssh-keys-ssh2';
import { ForgeCertificateParser } from '@svc/certs-forge';
import { FileLogStore } from '@svc/logs-file';
import { MemoryScheduler } from '@svc/scheduler-memory';

async function main(dataDir: string): Promise<void> {
  // 1. The database: SQLite at <dataDir>/controller.sqlite (pass `url: 'postgres://…'` for
  //    PostgreSQL). migrate() creates or updates the tables; it is safe to call on every start.
  const database = await createDatabase({ dataDir });
  await database.migrate();
  // The apps' logs, one file per app; the store keeps the recent files open: close it at the end.
  const logs = new FileLogStore(join(dataDir, 'logs'));

  try {
    // 2. One adapter per port. The secret key seals certificate private keys: keep it stable
    //    (the server reads SECRET_KEY); a throw-away one is enough here.
    const deps: CoreDependencies = {
      uow: database.uow,
      scheduler: new MemoryScheduler(),
      logs,
      keyParser: new Ssh2PublicKeyParser(),
      certificateParser: new ForgeCertificateParser(),
      passwords: new ScryptPasswordHasher(),
      tokens: new RandomTokenGenerator(),
      secrets: new AesGcmSecretBox(process.env.SECRET_KEY ?? generateSecretKey()),
      clock: new SystemClock(),
      timer: new SystemTimer(),
      ids: new RandomIdGenerator(),
      random: new CryptoRandomSource(),
      settings: { ...DEFAULT_SETTINGS, platformDomain: 'apps.example.com' },
    };

    // 3. Every use case, by name, each with one `execute`.
    const useCases = createUseCases(deps);

    // 4. Register (the first user becomes administrator), log in, and turn the token into the
    //    actor every other use case takes.
    const user = await useCases.registerUser.execute({ username: 'alice', password: 's3cret-pass', email: 'alice@example.com' }, null);
    console.log(`registered ${user.username} (administrator: ${String(user.isSuperuser)})`);
    const { token } = await useCases.login.execute({ username: 'alice', password: 's3cret-pass' });
    const alice = await useCases.authenticate.execute(token);

    // 5. Create an app: it starts with release v1.
    const app = await useCases.createApp.execute(alice, { id: 'myapp' });
    console.log(`created app ${app.id}`);

    // 6. Set config: a new release, v2.
    const published = await useCases.setConfig.execute(alice, app.id, { values: { GREETING: 'hello' } });
    console.log(`config set: release v${published.release.version}`);

    // 7. Read the release and the config back.
    const release = await useCases.getRelease.execute(alice, app.id, published.release.version);
    console.log(`release v${release.version}: ${release.summary}`);
    const config = await useCases.getConfig.execute(alice, app.id);
    console.log(`config of v${config.release.version}: ${JSON.stringify(config.config.values)}`);
    const releases = await useCases.listReleases.execute(alice, app.id, { page: 1, pageSize: 100 });
    console.log(`releases: ${releases.items.map((r) => `v${r.version}`).join(' ')}`);

    // 8. Refusals are typed errors with a stable code and a kind (invalid, not_found,
    //    conflict, forbidden, unavailable, …) that an embedder maps to its own transport.
    try {
      await useCases.createApp.execute(alice, { id: 'myapp' });
    } catch (error) {
      if (!DomainError.is(error)) throw error;
      console.log(`refused: ${error.code} (${error.kind})`);
    }
  } finally {
    await logs.close();
    await database.close();
  }
}

main(process.argv[2] ?? mkdtempSync(join(tmpdir(), 'svc-embed-'))).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
