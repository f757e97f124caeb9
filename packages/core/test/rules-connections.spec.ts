import { ConnectionLedger, clientOf, connectionRefusal, type ConnectionCaps } from '@svc/core';

const caps: ConnectionCaps = { maxConnections: 10, maxConnectionsPerAddress: 3, reservedConnections: 4 };

describe('connectionRefusal', () => {
  it('refuses a client at its cap with `address`, and anyone once the total is reached with `total`', () => {
    expect(connectionRefusal(caps, 0, 3)).toBe('address');
    expect(connectionRefusal(caps, 10, 0)).toBe('total');
    expect(connectionRefusal(caps, 0, 2)).toBeNull();
  });

  it('keeps the reserved places for clients that hold none: past total - reserved, a client with one open waits', () => {
    expect(connectionRefusal(caps, 5, 1)).toBeNull();
    expect(connectionRefusal(caps, 6, 1)).toBe('total');
    expect(connectionRefusal(caps, 6, 0)).toBeNull();
    expect(connectionRefusal(caps, 9, 0)).toBeNull();
  });

  it('without a reserve, only the total and the per-address cap count', () => {
    expect(connectionRefusal({ ...caps, reservedConnections: 0 }, 9, 2)).toBeNull();
  });
});

describe('clientOf', () => {
  it('counts IPv4 as itself, IPv6-mapped or not', () => {
    expect(clientOf('10.0.0.1')).toBe('10.0.0.1');
    expect(clientOf('::ffff:10.0.0.1')).toBe('10.0.0.1');
  });

  it('counts IPv6 by its /64, however the address is written', () => {
    expect(clientOf('2001:db8:0:1::1')).toBe('2001:db8:0:1::/64');
    expect(clientOf('2001:0DB8:0000:0001:ffff:0:0:2')).toBe('2001:db8:0:1::/64');
    expect(clientOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientOf('::1')).toBe('0:0:0:0::/64');
    expect(clientOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientOf('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
    expect(clientOf('2001:db8:0:2::1')).not.toBe(clientOf('2001:db8:0:1::1'));
  });

  it('leaves what is not an address as it is', () => {
    expect(clientOf('')).toBe('');
    expect(clientOf('1:2:3')).toBe('1:2:3');
    expect(clientOf('1::2::3')).toBe('1::2::3');
  });
});

describe('ConnectionLedger', () => {
  it('counts per client and in all; a release frees the place once', () => {
    const ledger = new ConnectionLedger(caps);
    const first = ledger.admit('2001:db8:0:1::1');
    const second = ledger.admit('2001:db8:0:1::2');
    ledger.admit('2001:db8:0:1::3');
    expect(ledger.admit('2001:db8:0:1::4')).toEqual({ refused: 'address' });
    expect(ledger.openFrom('2001:db8:0:1::99')).toBe(3);
    expect(ledger.open).toBe(3);
    if (!('release' in first) || !('release' in second)) throw new Error('admitted');
    first.release();
    first.release();
    expect(ledger.open).toBe(2);
    expect('release' in ledger.admit('2001:db8:0:1::5')).toBe(true);
  });

  it('40 addresses that each open all they may leave the reserve to addresses holding none, until one address per reserved place', () => {
    const ledger = new ConnectionLedger({ maxConnections: 100, maxConnectionsPerAddress: 10, reservedConnections: 50 });
    let attackerPlaces = 0;
    for (let a = 0; a < 40; a++) {
      for (let c = 0; c < 10; c++) if ('release' in ledger.admit(`10.0.0.${a}`)) attackerPlaces += 1;
    }
    // Five addresses filled the shared half; each of the 35 others got one reserved place.
    expect(attackerPlaces).toBe(50 + 35);
    expect('release' in ledger.admit('192.0.2.7')).toBe(true);
    expect(ledger.admit('10.0.0.39')).toEqual({ refused: 'total' });
  });
});
