import type { Page, Slice } from '../model/pagination';
import { deepCopy } from './copy';
import type { MemoryStore, Tables, Transaction } from './memory-store';

/** What every in-memory repository reads and writes through: the live tables or a transaction's. */
export class Context {
  private readonly tables: Tables;

  constructor(
    private readonly store: MemoryStore,
    readonly transaction: Transaction | null,
  ) {
    this.tables = transaction?.tables ?? store.live;
  }

  /** Every read starts here, so that a leaked transactional repository fails loudly. */
  read(): Tables {
    this.transaction?.assertOpen();
    return this.tables;
  }

  /** Every write starts here: transaction check, then injected failures. */
  write(): Tables {
    this.transaction?.assertOpen();
    this.store.beforeWrite();
    return this.tables;
  }

  allocate(counter: 'user' | 'certificate' | 'loginFailure'): number {
    return this.store.allocate(counter, this.transaction);
  }
}

export function copyOrNull<T>(value: T | undefined): T | null {
  return value === undefined ? null : deepCopy(value);
}

export function page<T>(rows: T[], slice: Slice): Page<T> {
  return { count: rows.length, items: rows.slice(slice.offset, slice.offset + slice.limit).map(deepCopy) };
}

