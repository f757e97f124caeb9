import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

/** A DNS server for tests: answers A queries for the names it knows, NXDOMAIN for the others. */
export interface DnsResponder {
  /** `127.0.0.1:<port>`, for pebble's `-dnsserver`. */
  readonly address: string;
  /** Names answered (lower case), and the IPv4 address each resolves to. */
  readonly names: Map<string, string>;
  close(): Promise<void>;
}

function readName(message: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let at = offset;
  for (;;) {
    const length = message[at];
    if (length === undefined) throw new Error('truncated question');
    if (length === 0) return { name: labels.join('.').toLowerCase(), end: at + 1 };
    labels.push(message.subarray(at + 1, at + 1 + length).toString('latin1'));
    at += 1 + length;
  }
}

/** The answer to one query: the question echoed, an A record when asked for one of `names`, NXDOMAIN for an unknown name. */
export function dnsAnswer(query: Buffer, names: ReadonlyMap<string, string>): Buffer {
  const { name, end } = readName(query, 12);
  const type = query.readUInt16BE(end);
  const question = query.subarray(12, end + 4);
  const address = names.get(name);
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2);
  const recursion = (query[2] as number) & 0x01;
  header[2] = 0x84 | recursion; // response, authoritative
  header[3] = 0x80 | (address === undefined ? 3 : 0); // recursion available; NXDOMAIN when unknown
  header.writeUInt16BE(1, 4);
  const answers: Buffer[] = [];
  if (address !== undefined && type === 1) {
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0);
    record.writeUInt16BE(1, 2);
    record.writeUInt16BE(1, 4);
    record.writeUInt32BE(5, 6);
    record.writeUInt16BE(4, 10);
    address.split('.').forEach((part, i) => record.writeUInt8(Number(part), 12 + i));
    answers.push(record);
  }
  header.writeUInt16BE(answers.length, 6);
  return Buffer.concat([header, question, ...answers]);
}

/** Starts the responder on a free UDP port of 127.0.0.1. */
export async function startDnsResponder(names: Record<string, string> = {}): Promise<DnsResponder> {
  const known = new Map(Object.entries(names).map(([name, address]) => [name.toLowerCase(), address]));
  const socket: Socket = createSocket('udp4');
  socket.on('message', (message, peer) => {
    try {
      socket.send(dnsAnswer(message, known), peer.port, peer.address);
    } catch {
      // A malformed query gets no answer.
    }
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    names: known,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
