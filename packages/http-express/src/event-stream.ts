import type { Response } from 'express';
import { presentEvent, type AuditEvent } from '@svc/core';

/** A comment line sent while nothing happens, so that proxies keep the stream open. */
const HEARTBEAT_MS = 15_000;

/** One event as Server-Sent Events frame it: its uuid as the id, its action as the event type, its JSON as data. */
export function sseFrame(event: AuditEvent): string {
  return `id: ${event.uuid}\nevent: ${event.action}\ndata: ${JSON.stringify(presentEvent(event))}\n\n`;
}

/**
 * Writes events to a `text/event-stream` answer. A client that reads slower than events come
 * is not sent a gap: once `maxBufferedBytes` wait unread, the stream ends, and the client
 * resumes with `Last-Event-ID` where it stopped reading, losing nothing.
 */
export class EventStreamWriter {
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly res: Response,
    private readonly maxBufferedBytes: number,
    private readonly onOverflow: () => void,
  ) {
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    // The client waits this long before reconnecting.
    res.write('retry: 2000\n\n');
    this.heartbeat = setInterval(() => this.res.write(': keep-alive\n\n'), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  write(events: readonly AuditEvent[]): void {
    if (this.closed || events.length === 0) return;
    this.res.write(events.map(sseFrame).join(''));
    if (this.res.writableLength > this.maxBufferedBytes) this.onOverflow();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
  }
}
