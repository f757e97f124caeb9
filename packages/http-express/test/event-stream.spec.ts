import type { Response } from 'express';
import type { AuditEvent } from '@svc/core';
import { EventStreamWriter, sseFrame } from '../src/event-stream';

const event = (n: number): AuditEvent => ({
  uuid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, created: new Date(Date.UTC(2026, 10, 26)), actor: 'alice', action: 'config.update',
  app: 'shop', appUuid: '00000000-0000-4000-8000-0000000000aa', target: `v${n}`, summary: `alice changed A${n}`, requestId: 'r', address: '',
});

/** A response that keeps what is written and reports as unread whatever `unread` says. */
function fakeResponse(unread: () => number): { res: Response; written: string[]; headers: Record<string, string> } {
  const written: string[] = [];
  const headers: Record<string, string> = {};
  const res = {
    status: () => res,
    setHeader: (name: string, value: string) => (headers[name] = value),
    flushHeaders: () => undefined,
    write: (text: string) => written.push(text) > 0,
    get writableLength() {
      return unread();
    },
  };
  return { res: res as unknown as Response, written, headers };
}

describe('the event stream writer', () => {
  it('frames each event with its uuid as id, its action as event and its JSON as data', () => {
    expect(sseFrame(event(1))).toBe(
      `id: ${event(1).uuid}\nevent: config.update\ndata: ${JSON.stringify({ uuid: event(1).uuid, created: '2026-11-26T00:00:00.000Z', actor: 'alice', action: 'config.update', app: 'shop', target: 'v1', summary: 'alice changed A1', request_id: 'r', address: '' })}\n\n`,
    );
  });

  it('ends the stream instead of skipping events once the client leaves too much unread', () => {
    let unread = 0;
    let overflowed = 0;
    const { res, written, headers } = fakeResponse(() => unread);
    const writer = new EventStreamWriter(res, 1000, () => (overflowed += 1));
    expect(headers['Content-Type']).toBe('text/event-stream; charset=utf-8');
    writer.write([event(1), event(2)]);
    expect(overflowed).toBe(0);
    unread = 1001;
    writer.write([event(3)]);
    expect(overflowed).toBe(1);
    writer.close();
    writer.write([event(4)]);
    expect(written.join('')).not.toContain(event(4).uuid);
    expect(written.join('').match(/^id: /gm)).toHaveLength(3);
  });
});
