import { readFile } from 'node:fs/promises';
import { processesOf } from './proc';
import type { UidRange } from './sandbox';
import { setTimeout as pause } from 'node:timers/promises';

/** A listening TCP socket: its port and the uid that owns it. */
export interface Listener {
  port: number;
  uid: number;
}

/** The listening sockets on `ports` in the text of `/proc/net/tcp` or `/proc/net/tcp6` (state 0A), with their owners. */
export function listenersOn(text: string, ports: ReadonlySet<number>): Listener[] {
  const found: Listener[] = [];
  for (const line of text.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    if (local === undefined || fields[3] !== '0A' || fields[7] === undefined) continue;
    const port = parseInt(local.slice(local.lastIndexOf(':') + 1), 16);
    const uid = Number(fields[7]);
    if (ports.has(port) && Number.isInteger(uid)) found.push({ port, uid });
  }
  return found;
}

async function listeners(ports: ReadonlySet<number>): Promise<Listener[]> {
  const texts = await Promise.all(['/proc/net/tcp', '/proc/net/tcp6'].map((file) => readFile(file, 'utf8').catch(() => '')));
  return texts.flatMap((text) => listenersOn(text, ports));
}

/**
 * Stops app processes that listen on the controller's own ports: while no controller process
 * runs (a restart with the apps held, ADR 0026) a sandboxed app can bind the API's or the git
 * server's port on the controller's address. Its listener completes no connection (the
 * firewall drops what it sends from those ports), but the next controller could not bind the
 * port and would not start. Every process of an app's uid (of `range`) that owns such a
 * listener is killed; resolves with what was found, once those listeners are gone (or after 5 s).
 */
export async function evictSquatters(ports: number[], range: UidRange): Promise<Listener[]> {
  const wanted = new Set(ports.filter((port) => Number.isInteger(port) && port > 0 && port <= 65535));
  if (wanted.size === 0) return [];
  const isApp = (listener: Listener): boolean => listener.uid >= range.from && listener.uid <= range.to;
  const found = (await listeners(wanted)).filter(isApp);
  const deadline = Date.now() + 5000;
  for (let left = found; left.length > 0 && Date.now() < deadline; left = (await listeners(wanted)).filter(isApp)) {
    for (const uid of new Set(left.map((listener) => listener.uid))) {
      for (const pid of await processesOf(uid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
    }
    await pause(50);
  }
  return found;
}
