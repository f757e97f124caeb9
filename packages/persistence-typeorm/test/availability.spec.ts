import { AlreadyExists, DomainError, Unavailable } from '@svc/core';
import { QueryFailedError } from 'typeorm';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable, translateUnavailable } from '../src';

function coded(code: string, message = `failure ${code}`): Error {
  return Object.assign(new Error(message), { code });
}

function queryFailed(driverError: Error): QueryFailedError {
  return new QueryFailedError('SELECT 1', [], driverError);
}

describe('isDatabaseUnavailable', () => {
  it.each([
    ['a refused connection', coded('ECONNREFUSED')],
    ['a reset connection', coded('ECONNRESET')],
    ['a host that cannot be resolved', coded('ENOTFOUND')],
    ['every address of a host refusing', Object.assign(new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')]), {})],
    ['a connection lost during a query', queryFailed(new Error('Connection terminated unexpectedly'))],
    ['a connection that timed out', new Error('Connection terminated due to connection timeout')],
    ['a pool that found no connection in time', new Error('timeout exceeded when trying to connect')],
    ['a server shutting down (57P01)', queryFailed(coded('57P01', 'terminating connection due to administrator command'))],
    ['a server that crashed (57P02)', coded('57P02')],
    ['a server still starting (57P03)', coded('57P03', 'the database system is starting up')],
    ['a connection exception (08006)', coded('08006')],
    ['a failed connection (08001)', coded('08001')],
    ['too many connections (53300)', coded('53300')],
    ['a SQLite file still locked after the busy timeout', queryFailed(coded('SQLITE_BUSY', 'database is locked'))],
    ['a SQLite I/O error', queryFailed(coded('SQLITE_IOERR_WRITE', 'disk I/O error'))],
    ['a SQLite file that cannot be opened', coded('SQLITE_CANTOPEN')],
    ['a full disk', queryFailed(coded('SQLITE_FULL'))],
    ['a data source that is not connected', Object.assign(new Error('not connected'), { name: 'CannotExecuteNotConnectedError' })],
    ['a closed data source', new Error('Driver not Connected')],
    ['a transaction whose connection failed midway', Object.assign(new Error('released'), { name: 'QueryRunnerAlreadyReleasedError' })],
    ['a cause chain ending in a refused connection', new Error('wrapped', { cause: coded('ECONNREFUSED') })],
    ['the translated error itself', new Unavailable(DATABASE_UNAVAILABLE, 'x')],
  ])('is true for %s', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a unique violation (23505)', queryFailed(coded('23505', 'duplicate key value violates unique constraint'))],
    ['an undefined table (42P01)', queryFailed(coded('42P01', 'relation "x" does not exist'))],
    ['a serialization failure (40001)', queryFailed(coded('40001'))],
    ['a statement timeout (57014)', queryFailed(coded('57014', 'canceling statement due to statement timeout'))],
    ['a SQLite unique violation', queryFailed(coded('SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: apps.id'))],
    ['a SQLite syntax error', queryFailed(coded('SQLITE_ERROR', 'near "x": syntax error'))],
    ['a plain error', new Error('boom')],
    ['a domain error', new AlreadyExists('id')],
    ['the scheduler\'s Unavailable', new Unavailable('SCHEDULER.FAILED', 'down')],
    ['a value that is not an error', 'ECONNREFUSED'],
    ['null', null],
  ])('is false for %s', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});

describe('translateUnavailable', () => {
  it('turns a lost connection into the core\'s Unavailable with a message for clients', () => {
    const translated = translateUnavailable(queryFailed(new Error('Connection terminated unexpectedly')));

    expect(translated).toBeInstanceOf(Unavailable);
    expect(DomainError.is(translated) && [translated.code, translated.kind, translated.message]).toEqual([
      'DATABASE.UNAVAILABLE',
      'unavailable',
      'The database is not available; try again shortly.',
    ]);
  });

  it('returns every other error unchanged', () => {
    const unique = queryFailed(coded('23505'));
    const domain = new AlreadyExists('username');
    const plain = new Error('boom');

    expect(translateUnavailable(unique)).toBe(unique);
    expect(translateUnavailable(domain)).toBe(domain);
    expect(translateUnavailable(plain)).toBe(plain);
  });
});
