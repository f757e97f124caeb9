import { readFileSync } from 'node:fs';
import { availableParallelism, release } from 'node:os';

/** What the figures were measured on. */
export interface MachineInfo {
  cpuModel: string;
  /** CPUs this process may run on. */
  cores: number;
  memoryGiB: number;
  kernel: string;
  node: string;
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Reads the machine's description from /proc and the running Node. */
export function describeMachine(): MachineInfo {
  const cpuinfo = readText('/proc/cpuinfo');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? 'unknown';
  const memKb = Number(/^MemTotal:\s+(\d+) kB/m.exec(readText('/proc/meminfo'))?.[1] ?? 'NaN');
  return {
    cpuModel: model,
    cores: availableParallelism(),
    memoryGiB: Math.round((memKb / 1024 / 1024) * 10) / 10,
    kernel: release(),
    node: process.version,
  };
}
