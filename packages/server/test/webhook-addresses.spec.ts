import { isAllowListed, isRestrictedAddress } from '../src/webhook-addresses';
import { webhookAllowedHosts } from '../src/config-events';
import { HttpWebhookSender } from '../src/webhook-sender';

describe('where webhook deliveries may go', () => {
  it('restricts this host, loopback, private, shared, link-local and non-unicast addresses', () => {
    const own = ['192.0.2.2'];
    for (const address of ['127.0.0.1', '10.255.255.53', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '224.0.0.1', '192.0.2.2', 'not-an-ip']) {
      expect([address, isRestrictedAddress(address, own)]).toEqual([address, true]);
    }
    for (const address of ['203.0.113.80', '8.8.8.8', '2001:db8::1', '192.0.2.3']) {
      expect([address, isRestrictedAddress(address, own)]).toEqual([address, false]);
    }
  });

  it('lets the allow-list name a host, an address or a range', () => {
    expect(isAllowListed('hooks.internal', '10.0.0.5', ['hooks.internal'])).toBe(true);
    expect(isAllowListed('x', '127.0.0.1', ['127.0.0.1'])).toBe(true);
    expect(isAllowListed('x', '10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(isAllowListed('x', '::ffff:10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(isAllowListed('x', '11.1.2.3', ['10.0.0.0/8'])).toBe(false);
    expect(isAllowListed('x', '127.0.0.1', [])).toBe(false);
    expect(webhookAllowedHosts({ WEBHOOK_ALLOWED_HOSTS: ' 127.0.0.1, Hooks.Example ,10.0.0.0/8' })).toEqual(['127.0.0.1', 'hooks.example', '10.0.0.0/8']);
    expect(() => webhookAllowedHosts({ WEBHOOK_ALLOWED_HOSTS: 'http://x/' })).toThrow(/WEBHOOK_ALLOWED_HOSTS/);
  });

  it('refuses to send to a restricted address before connecting, and to a name that resolves to one', async () => {
    const sender = new HttpWebhookSender({ allowedHosts: [], timeoutMs: 1000, ownAddresses: [] });
    const direct = await sender.send('http://127.0.0.1:1/hook', {}, '{}');
    expect(direct).toEqual({ status: null, error: expect.stringMatching(/restricted address \(127\.0\.0\.1\)/) });
    const named = await sender.send('http://localhost:1/hook', {}, '{}');
    expect(named.status).toBeNull();
    expect(named.error).toMatch(/restricted address/);
    const v6 = await sender.send('http://[::1]:1/hook', {}, '{}');
    expect(v6.error).toMatch(/restricted address/);
  });
});
