import { request as httpRequest } from 'node:http';

/** An event as the journal and the stream show it. */
export interface EventJson {
  uuid: string;
  actor: string;
  action: string;
  app: string | null;
  target: string;
  summary: string;
  request_id: string;
  address: string;
}

/** One Server-Sent Events frame of the event stream. */
export interface EventFrame {
  id: string;
  event: string;
  data: EventJson;
}

/** Reads Server-Sent Events until `count` arrived, then drops the connection. */
export function readEvents(url: string, token: string, count: number, lastEventId?: string): Promise<EventFrame[]> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { Authorization: `token ${token}` };
    if (lastEventId !== undefined) headers['Last-Event-ID'] = lastEventId;
    const req = httpRequest(url, { headers }, (res) => {
      if (res.statusCode !== 200 || !String(res.headers['content-type']).startsWith('text/event-stream')) {
        reject(new Error(`status ${res.statusCode} ${res.headers['content-type']}`));
        return;
      }
      let buffer = '';
      const frames: EventFrame[] = [];
      res.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('utf8');
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = Object.fromEntries(frame.split('\n').filter((l) => !l.startsWith(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
          if (fields.data === undefined) continue;
          frames.push({ id: fields.id as string, event: fields.event as string, data: JSON.parse(fields.data as string) as EventJson });
          if (frames.length === count) {
            // Frames after the count that came in the same chunk are the reader's to drop.
            req.destroy();
            resolve(frames);
            return;
          }
        }
      });
    });
    req.on('error', (error) => {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
    req.end();
  });
}

