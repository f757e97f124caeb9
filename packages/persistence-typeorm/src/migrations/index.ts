import type { MigrationInterface } from 'typeorm';
import type { Dialect } from '../dialect';
import { InitialSchemaPostgres1763712000000 } from './postgres/1763712000000-initial-schema';
import { SharedStatePostgres1763798400000 } from './postgres/1763798400000-shared-state';
import { BuildWorkdirPostgres1763884800000 } from './postgres/1763884800000-build-workdir';
import { ListCountsPostgres1763990000000 } from './postgres/1763990000000-list-counts';
import { LoginFailureAddressPostgres1764000000010 } from './postgres/1764000000010-login-failure-address';
import { DeployLeasesPostgres1764072000000 } from './postgres/1764072000000-deploy-leases';
import { TlsStatePostgres1764200000000 } from './postgres/1764200000000-tls-state';
import { InitialSchemaSqlite1763712000000 } from './sqlite/1763712000000-initial-schema';
import { SharedStateSqlite1763798400000 } from './sqlite/1763798400000-shared-state';
import { BuildWorkdirSqlite1763884800000 } from './sqlite/1763884800000-build-workdir';
import { ListCountsSqlite1763990000000 } from './sqlite/1763990000000-list-counts';
import { LoginFailureAddressSqlite1764000000010 } from './sqlite/1764000000010-login-failure-address';
import { DeployLeasesSqlite1764072000000 } from './sqlite/1764072000000-deploy-leases';
import { TlsStateSqlite1764200000000 } from './sqlite/1764200000000-tls-state';
import { EventsSqlite1795734000000 } from './sqlite/1795734000000-events';
import { EventsPostgres1795734000000 } from './postgres/1795734000000-events';
import { BuildSlotsSqlite1795820400000 } from './sqlite/1795820400000-build-slots';
import { BuildSlotsPostgres1795820400000 } from './postgres/1795820400000-build-slots';
import { RunSlotsSqlite1796400000037 } from './sqlite/1796400000037-run-slots';
import { RunSlotsPostgres1796400000037 } from './postgres/1796400000037-run-slots';
import { AcmeFairnessSqlite1796200000033 } from './sqlite/1796200000033-acme-fairness';
import { AcmeFairnessPostgres1796200000033 } from './postgres/1796200000033-acme-fairness';
import { JournalByAppSqlite1796300000036 } from './sqlite/1796300000036-journal-by-app';
import { JournalByAppPostgres1796300000036 } from './postgres/1796300000036-journal-by-app';
import { WebhookHealthSqlite1796500000034 } from './sqlite/1796500000034-webhook-health';
import { WebhookHealthPostgres1796500000034 } from './postgres/1796500000034-webhook-health';

type MigrationClass = new () => MigrationInterface;

/*
 * One ordered list per dialect. A migration is never edited once released: a change to
 * the schema is a new migration, added to both lists under the same name.
 */
const MIGRATIONS: Record<Dialect, MigrationClass[]> = {
  sqlite: [
    InitialSchemaSqlite1763712000000,
    SharedStateSqlite1763798400000,
    BuildWorkdirSqlite1763884800000,
    ListCountsSqlite1763990000000,
    LoginFailureAddressSqlite1764000000010,
    DeployLeasesSqlite1764072000000,
    TlsStateSqlite1764200000000,
    EventsSqlite1795734000000,
    BuildSlotsSqlite1795820400000,
    RunSlotsSqlite1796400000037,
    AcmeFairnessSqlite1796200000033,
    JournalByAppSqlite1796300000036,
    WebhookHealthSqlite1796500000034,
  ],
  postgres: [
    InitialSchemaPostgres1763712000000,
    SharedStatePostgres1763798400000,
    BuildWorkdirPostgres1763884800000,
    ListCountsPostgres1763990000000,
    LoginFailureAddressPostgres1764000000010,
    DeployLeasesPostgres1764072000000,
    TlsStatePostgres1764200000000,
    EventsPostgres1795734000000,
    BuildSlotsPostgres1795820400000,
    RunSlotsPostgres1796400000037,
    AcmeFairnessPostgres1796200000033,
    JournalByAppPostgres1796300000036,
    WebhookHealthPostgres1796500000034,
  ],
};

/** The migrations of `dialect`, oldest first. */
export function migrationsFor(dialect: Dialect): MigrationClass[] {
  return [...MIGRATIONS[dialect]];
}

/** The table that records which migrations have run. */
export const MIGRATIONS_TABLE = 'schema_migrations';
