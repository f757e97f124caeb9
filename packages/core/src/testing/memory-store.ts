import type {
  App,
  Build,
  Certificate,
  Config,
  Container,
  DeployLease,
  Domain,
  Key,
  Release,
  Token,
  User,
} from '../model/entities';
import type { AuditEvent, Webhook, WebhookDelivery } from '../model/events';
import { deepCopy } from './copy';

/** A failed login attempt as the in-memory store keeps it. */
export interface StoredLoginFailure {
  username: string;
  at: Date;
  address: string;
}

/** A collaborator grant as the in-memory store keeps it. */
export interface StoredPermission {
  app: string;
  username: string;
}

/** Every row of an InMemoryUnitOfWork, each collection sorted by its key. */
export interface MemoryState {
  users: User[];
  tokens: Token[];
  loginFailures: StoredLoginFailure[];
  apps: App[];
  configs: Config[];
  builds: Build[];
  releases: Release[];
  containers: Container[];
  domains: Domain[];
  keys: Key[];
  permissions: StoredPermission[];
  certificates: Certificate[];
  deploys: DeployLease[];
  events: AuditEvent[];
  webhooks: Webhook[];
  deliveries: WebhookDelivery[];
}

interface Row<V> {
  /** Insertion order, kept across updates, for tie-breaking lists. */
  seq: number;
  value: V;
}

/** One keyed collection as repositories see it. Stored values are never mutated in place, only replaced. */
export abstract class TableView<K, V> {
  /** Every row with its key, in no particular order. */
  abstract entries(): Array<[K, Row<V>]>;
  abstract row(key: K): Row<V> | undefined;
  /** Inserts or replaces; a replaced row keeps its insertion order. Stores a copy. */
  abstract set(key: K, value: V): void;
  abstract remove(key: K): void;

  get(key: K): V | undefined {
    return this.row(key)?.value;
  }

  has(key: K): boolean {
    return this.row(key) !== undefined;
  }

  /** Rows in insertion order. */
  ordered(): Array<Row<V>> {
    return this.entries()
      .map(([, row]) => row)
      .sort((a, b) => a.seq - b.seq);
  }

  /** Values in insertion order. */
  values(): V[] {
    return this.ordered().map((row) => row.value);
  }

  find(predicate: (value: V) => boolean): V | undefined {
    return this.values().find(predicate);
  }

  filter(predicate: (value: V) => boolean): V[] {
    return this.values().filter(predicate);
  }

  removeWhere(predicate: (value: V) => boolean): void {
    for (const [key, row] of this.entries()) if (predicate(row.value)) this.remove(key);
  }
}

/** A collection of committed rows. */
export class Table<K, V> extends TableView<K, V> {
  private readonly rows = new Map<K, Row<V>>();

  constructor(private readonly nextSeq: () => number) {
    super();
  }

  entries(): Array<[K, Row<V>]> {
    return [...this.rows];
  }

  row(key: K): Row<V> | undefined {
    return this.rows.get(key);
  }

  set(key: K, value: V): void {
    this.rows.set(key, { seq: this.rows.get(key)?.seq ?? this.nextSeq(), value: deepCopy(value) });
  }

  remove(key: K): void {
    this.rows.delete(key);
  }

  /** Writes a row exactly as a committing transaction left it; null deletes it. */
  apply(key: K, row: Row<V> | null): void {
    if (row === null) this.rows.delete(key);
    else this.rows.set(key, row);
  }
}

/**
 * A transaction's view of a Table: its own writes over the committed rows. Nobody else
 * sees them until commit copies them into the table; rollback simply drops them, which
 * also leaves alone whatever others committed in the meantime.
 */
class OverlayTable<K, V> extends TableView<K, V> {
  /** Rows this transaction wrote; null marks a row it deleted. */
  private readonly written = new Map<K, Row<V> | null>();

  constructor(
    private readonly base: Table<K, V>,
    private readonly nextSeq: () => number,
  ) {
    super();
  }

  entries(): Array<[K, Row<V>]> {
    const merged = this.base.entries().filter(([key]) => !this.written.has(key));
    for (const [key, row] of this.written) if (row !== null) merged.push([key, row]);
    return merged;
  }

  row(key: K): Row<V> | undefined {
    return this.written.has(key) ? (this.written.get(key) ?? undefined) : this.base.row(key);
  }

  set(key: K, value: V): void {
    this.written.set(key, { seq: this.row(key)?.seq ?? this.nextSeq(), value: deepCopy(value) });
  }

  remove(key: K): void {
    if (this.row(key) !== undefined) this.written.set(key, null);
  }

  commit(): void {
    for (const [key, row] of this.written) this.base.apply(key, row);
  }
}

/** Every collection, either committed or as one transaction sees it. */
export interface Tables {
  users: TableView<string, User>;
  tokens: TableView<string, Token>;
  loginFailures: TableView<number, StoredLoginFailure>;
  apps: TableView<string, App>;
  configs: TableView<string, Config>;
  builds: TableView<string, Build>;
  /** Keyed by `app` and `version`, the unique pair. */
  releases: TableView<string, Release>;
  containers: TableView<string, Container>;
  domains: TableView<string, Domain>;
  /** Keyed by `owner` and `id`, the unique pair. */
  keys: TableView<string, Key>;
  permissions: TableView<string, StoredPermission>;
  certificates: TableView<string, Certificate>;
  /** Keyed by app. */
  deploys: TableView<string, DeployLease>;
  /** Keyed by uuid; insertion order is journal order. */
  events: TableView<string, AuditEvent>;
  webhooks: TableView<string, Webhook>;
  deliveries: TableView<string, WebhookDelivery>;
}

type TableOf<T> = { [P in keyof T]: T[P] extends TableView<infer K, infer V> ? Table<K, V> : never };

/** One transaction: its private tables, and what to undo of the id counters if it rolls back. */
export class Transaction {
  readonly tables: Tables;
  private readonly overlays: Array<OverlayTable<unknown, unknown>> = [];
  private readonly undos: Array<() => void> = [];
  private open = true;

  constructor(live: TableOf<Tables>, nextSeq: () => number) {
    const overlay = <K, V>(table: Table<K, V>): OverlayTable<K, V> => {
      const view = new OverlayTable(table, nextSeq);
      this.overlays.push(view as OverlayTable<unknown, unknown>);
      return view;
    };
    this.tables = {
      users: overlay(live.users),
      tokens: overlay(live.tokens),
      loginFailures: overlay(live.loginFailures),
      apps: overlay(live.apps),
      configs: overlay(live.configs),
      builds: overlay(live.builds),
      releases: overlay(live.releases),
      containers: overlay(live.containers),
      domains: overlay(live.domains),
      keys: overlay(live.keys),
      permissions: overlay(live.permissions),
      certificates: overlay(live.certificates),
      deploys: overlay(live.deploys),
      events: overlay(live.events),
      webhooks: overlay(live.webhooks),
      deliveries: overlay(live.deliveries),
    };
  }

  onRollback(undo: () => void): void {
    this.undos.push(undo);
  }

  /** @throws Error when the transaction has ended: a sign of work that did not await its writes. */
  assertOpen(): void {
    if (!this.open) throw new Error('This transaction has ended; its repositories can no longer be used');
  }

  commit(): void {
    this.open = false;
    for (const view of this.overlays) view.commit();
  }

  rollback(): void {
    this.open = false;
    for (let i = this.undos.length - 1; i >= 0; i--) (this.undos[i] as () => void)();
  }
}

/** The committed rows of an InMemoryUnitOfWork, with the id counters and write-failure injection. */
export class MemoryStore {
  private seq = 0;
  private readonly nextSeq = (): number => ++this.seq;
  /** The committed tables; repositories outside transactions read and write them directly. */
  readonly live: TableOf<Tables> = {
    users: new Table(this.nextSeq),
    tokens: new Table(this.nextSeq),
    loginFailures: new Table(this.nextSeq),
    apps: new Table(this.nextSeq),
    configs: new Table(this.nextSeq),
    builds: new Table(this.nextSeq),
    releases: new Table(this.nextSeq),
    containers: new Table(this.nextSeq),
    domains: new Table(this.nextSeq),
    keys: new Table(this.nextSeq),
    permissions: new Table(this.nextSeq),
    certificates: new Table(this.nextSeq),
    deploys: new Table(this.nextSeq),
    events: new Table(this.nextSeq),
    webhooks: new Table(this.nextSeq),
    deliveries: new Table(this.nextSeq),
  };
  private readonly counters = { user: 1, certificate: 1, loginFailure: 1 };
  private writeFailures = { remaining: 0, error: (): Error => new Error('Write failed (injected)') };

  begin(): Transaction {
    return new Transaction(this.live, this.nextSeq);
  }

  /**
   * Takes the next id of a sequence. When the transaction that took it rolls back and
   * nobody took one since, the id is handed back, so a rolled-back create leaves no gap.
   */
  allocate(counter: 'user' | 'certificate' | 'loginFailure', transaction: Transaction | null): number {
    const id = this.counters[counter]++;
    transaction?.onRollback(() => {
      if (this.counters[counter] === id + 1) this.counters[counter] = id;
    });
    return id;
  }

  /** Called first by every write: throws while injected failures remain. */
  beforeWrite(): void {
    if (this.writeFailures.remaining <= 0) return;
    this.writeFailures.remaining--;
    throw this.writeFailures.error();
  }

  failNextWrites(count: number, error?: Error): void {
    this.writeFailures = {
      remaining: count,
      error: error ? () => error : () => new Error('Write failed (injected)'),
    };
  }

  snapshot(): MemoryState {
    const by = <K, V>(table: Table<K, V>, key: (v: V) => string | number): V[] =>
      table
        .ordered()
        .map((row) => ({ row, k: key(row.value) }))
        .sort((a, b) => compare(a.k, b.k) || a.row.seq - b.row.seq)
        .map(({ row }) => deepCopy(row.value));
    return {
      users: by(this.live.users, (u) => u.id),
      tokens: by(this.live.tokens, (t) => t.hash),
      loginFailures: by(this.live.loginFailures, (f) => `${f.username}\u0000${f.at.toISOString()}`),
      apps: by(this.live.apps, (a) => a.id),
      configs: by(this.live.configs, (c) => c.uuid),
      builds: by(this.live.builds, (b) => b.uuid),
      releases: by(this.live.releases, (r) => `${r.app}\u0000${String(r.version).padStart(12, '0')}`),
      containers: by(this.live.containers, (c) => c.uuid),
      domains: by(this.live.domains, (d) => d.domain),
      keys: by(this.live.keys, (k) => `${k.owner}\u0000${k.id}`),
      permissions: by(this.live.permissions, (p) => `${p.app}\u0000${p.username}`),
      certificates: by(this.live.certificates, (c) => c.commonName),
      deploys: by(this.live.deploys, (d) => d.app),
      events: this.live.events.ordered().map(({ value }) => deepCopy(value)),
      webhooks: by(this.live.webhooks, (w) => w.uuid),
      deliveries: by(this.live.deliveries, (d) => d.uuid),
    };
  }
}

/** Code-unit order, the same as a binary collation in a database. */
export function compare(a: string | number, b: string | number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The key of a row identified by two values. */
export function pair(a: string, b: string | number): string {
  return `${a}\u0000${b}`;
}
