/*
 * Tunnels: a request that asked for an upgrade (WebSocket) and got `101 Switching Protocols`
 * from its process becomes a tunnel, bytes passed both ways as they are, closed when either
 * side closes or after the idle timeout. CONNECT is not served (the request head is refused
 * with 400), so upgrades are the only tunnels.
 */
import type { Field, ResponseHead } from './http1';
import type { Inbound } from './inbound';
import type { Relay } from './relay';
import type { Outbound } from './upstream-pool';

function serializedFields(fields: readonly Field[]): string {
  let text = '';
  for (const field of fields) text += `${field.name}: ${field.value}\r\n`;
  return text;
}

/** An interim answer (1xx) or the 101 that opens a tunnel, with the process's headers as they are. */
export function interimHead(response: Pick<ResponseHead, 'status' | 'reason' | 'fields'>): string {
  return `HTTP/1.1 ${response.status} ${response.reason}\r\n${serializedFields(response.fields)}\r\n`;
}

/**
 * Turns the client's connection and the process's into a tunnel after a 101: the 101 and
 * what followed it go to the client, what the client sent beyond its request goes to the
 * process, then bytes are piped both ways.
 */
export function openTunnel(relay: Relay, inbound: Inbound, upstream: Outbound, response: ResponseHead, rest: Buffer | null): void {
  const client = inbound.socket;
  upstream.user = null;
  const early = inbound.tunnelled();
  client.write(interimHead(response), 'latin1');
  if (rest !== null) client.write(rest);
  if (early !== null) upstream.socket.write(early);
  const processSocket = upstream.socket;
  relay.track(processSocket);
  relay.track(client);
  upstream.tunnel = client;
  client.pipe(processSocket);
  processSocket.once('close', () => client.destroy());
  client.once('close', () => processSocket.destroy());
  processSocket.setTimeout(relay.ctx.idleTimeoutMs, () => processSocket.destroy());
  client.setTimeout(relay.ctx.idleTimeoutMs, () => client.destroy());
}
