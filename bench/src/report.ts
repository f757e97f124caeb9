/* The benchmark's results, the targets they are held to, and the report printed from them. */
import type { LoadResult } from './load';
import type { MachineInfo } from './machine';

export type Kind = 'sqlite' | 'postgres';
export type Side = 'controller' | 'baseline';

export interface Pair {
  controller: LoadResult;
  baseline: LoadResult;
}

export interface ThroughputRow extends Pair {
  endpoint: string;
  connections: number;
  ratio: number;
}

export interface GrowthRow {
  rows: number;
  apps: Pair;
  releases: Pair;
}

export interface ConfigRow {
  releases: number;
  latency: Pair;
}

export interface DatabaseResult {
  database: Kind;
  version: string;
  throughput: ThroughputRow[];
  growth: GrowthRow[];
  configGrowth: ConfigRow[];
  memory: Record<Side, { idleMiB: number; after100kAppsMiB: number; peakUnderLoadMiB: number; peakMiB: number }>;
  targets: Target[];
  seconds: number;
}

export interface Target {
  name: string;
  value: number;
  limit: string;
  holds: boolean;
}

// ---- the API, for setting up users -----------------------------------------------------

// ---- targets and tables --------------------------------------------------------------

export function evaluate(rows: ThroughputRow[], growth: GrowthRow[], config: ConfigRow[]): Target[] {
  const targets: Target[] = [];
  // Every hot endpoint, the config change included, at 0.8 of the baseline at 64 connections (logins are scrypt's, not the API's).
  for (const row of rows) {
    if (row.connections !== 64 || row.endpoint.includes('login')) continue;
    targets.push({ name: `${row.endpoint} x64: controller/baseline throughput`, value: row.ratio, limit: '>= 0.80', holds: row.ratio >= 0.8 });
  }
  const first = growth[0];
  const last = growth[growth.length - 1];
  if (first && last) {
    const apps = last.apps.controller.p50 / first.apps.controller.p50;
    const releases = last.releases.controller.p50 / first.releases.controller.p50;
    targets.push({ name: `GET /v1/apps/ p50 at ${last.rows} rows / at ${first.rows} rows`, value: apps, limit: '<= 1.50', holds: apps <= 1.5 });
    targets.push({ name: `GET .../releases/ p50 at ${last.rows} rows / at ${first.rows} rows`, value: releases, limit: '<= 1.50', holds: releases <= 1.5 });
  }
  const small = config[0];
  const large = config[1];
  if (small && large) {
    const flat = large.latency.controller.p50 / small.latency.controller.p50;
    targets.push({
      name: `POST .../config/ p50 with ${large.releases} releases / with ${small.releases}`,
      value: flat,
      limit: '<= 1.50',
      holds: flat <= 1.5,
    });
  }
  return targets;
}

export function fmt(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return '-';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function table(headers: string[], body: string[][]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...body.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join(' | ')} |`;
  const rule = `|${widths.map((width, i) => (i === 0 ? `${'-'.repeat(width + 1)}-` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [line(headers), rule, ...body.map(line)].join('\n');
}

/** How the throughput and latency runs were made, as the report states them. */
export interface RunShape {
  durationS: number;
  warmupS: number;
  growthRequests: number;
  largestText: string;
}

export function report(machine: MachineInfo, results: DatabaseResult[], shape: RunShape): string {
  const { durationS: DURATION_S, warmupS: WARMUP_S, growthRequests: GROWTH_REQUESTS, largestText: LARGEST_TEXT } = shape;
  const out: string[] = [];
  out.push(`Machine: ${machine.cpuModel}, ${machine.cores} CPUs, ${machine.memoryGiB} GiB, Linux ${machine.kernel}, Node ${machine.node}`);
  out.push(`Throughput runs: ${DURATION_S} s each after ${WARMUP_S} s of warm-up; latency runs: ${GROWTH_REQUESTS} requests at 1 connection. Latencies in ms.`);
  for (const result of results) {
    out.push('', `## ${result.version}`, '');
    out.push(
      table(
        ['endpoint', 'conns', 'controller req/s', 'p50', 'p99', 'baseline req/s', 'p50', 'p99', 'ratio'],
        result.throughput.map((row) => [
          row.endpoint,
          String(row.connections),
          fmt(row.controller.rps, 0),
          fmt(row.controller.p50),
          fmt(row.controller.p99),
          fmt(row.baseline.rps, 0),
          fmt(row.baseline.p50),
          fmt(row.baseline.p99),
          fmt(row.ratio),
        ]),
      ),
    );
    out.push('', 'Growth (1 connection; controller / baseline):', '');
    out.push(
      table(
        ['rows', 'GET /v1/apps/ p50', 'p99', 'baseline p50', 'GET .../releases/ p50', 'p99', 'baseline p50'],
        result.growth.map((row) => [
          row.rows.toLocaleString('en-US'),
          fmt(row.apps.controller.p50),
          fmt(row.apps.controller.p99),
          fmt(row.apps.baseline.p50),
          fmt(row.releases.controller.p50),
          fmt(row.releases.controller.p99),
          fmt(row.releases.baseline.p50),
        ]),
      ),
    );
    out.push('', 'Config POST latency by releases on the app (1 connection):', '');
    out.push(
      table(
        ['releases on the app', 'controller p50', 'p99', 'baseline p50', 'p99'],
        result.configGrowth.map((row) => [
          row.releases.toLocaleString('en-US'),
          fmt(row.latency.controller.p50),
          fmt(row.latency.controller.p99),
          fmt(row.latency.baseline.p50),
          fmt(row.latency.baseline.p99),
        ]),
      ),
    );
    out.push('', 'Resident memory (MiB):', '');
    out.push(
      table(
        ['process', 'idle, empty', `after ${LARGEST_TEXT} apps`, 'peak under load', 'peak (VmHWM)'],
        (['controller', 'baseline'] as const).map((side) => [
          side,
          fmt(result.memory[side].idleMiB, 0),
          fmt(result.memory[side].after100kAppsMiB, 0),
          fmt(result.memory[side].peakUnderLoadMiB, 0),
          fmt(result.memory[side].peakMiB, 0),
        ]),
      ),
    );
    out.push('', 'Targets:', '');
    out.push(table(['target', 'value', 'limit', 'holds'], result.targets.map((t) => [t.name, fmt(t.value), t.limit, t.holds ? 'yes' : 'NO'])));
    out.push('', `(${result.database} run took ${fmt(result.seconds, 0)} s)`);
  }
  return `${out.join('\n')}\n`;
}

