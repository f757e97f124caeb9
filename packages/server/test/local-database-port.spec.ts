import { localDatabasePort } from '../src/server';

describe('localDatabasePort', () => {
  it('names the port of a database on this machine, 5432 when the URL gives none', () => {
    expect(localDatabasePort('postgres://svc:pw@localhost/svc')).toBe(5432);
    expect(localDatabasePort('postgresql://127.0.0.1:5433/svc')).toBe(5433);
    expect(localDatabasePort('postgres://[::1]:6432/svc')).toBe(6432);
    expect(localDatabasePort('postgres://db.localhost/svc')).toBe(5432);
  });

  it('names none for another host or no URL', () => {
    expect(localDatabasePort('postgres://db.example.com:5432/svc')).toBeNull();
    expect(localDatabasePort('postgres://10.0.0.5/svc')).toBeNull();
    expect(localDatabasePort(null)).toBeNull();
  });
});
