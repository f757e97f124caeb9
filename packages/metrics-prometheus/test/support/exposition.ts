import parsePrometheusTextFormat from 'parse-prometheus-text-format';

/** Metric families as the Prometheus text parser reads them. */
export type Families = ReturnType<typeof parsePrometheusTextFormat>;

/**
 * Parses a scrape with a Prometheus text parser (throwing on anything malformed). The parser
 * keeps only the last label set of a histogram, so the text is parsed as is, then once more
 * with histograms declared untyped: their `_bucket`, `_sum` and `_count` series become
 * families of their own, with their labels.
 */
export function parseExposition(text: string): Families {
  const families = parsePrometheusTextFormat(text);
  const series = parsePrometheusTextFormat(text.replace(/^# TYPE (\S+) histogram$/gm, '# TYPE $1 untyped'));
  // A histogram's series alternate (buckets, sum and count of one label set, then the next):
  // each run comes back as a family of its own, gathered here by name.
  const gathered = new Map<string, Families[number]>();
  for (const s of series) {
    if (families.some((f) => f.name === s.name)) continue;
    const seen = gathered.get(s.name);
    if (seen === undefined) gathered.set(s.name, { ...s, metrics: [...s.metrics] });
    else seen.metrics.push(...s.metrics);
  }
  return [...families, ...gathered.values()];
}

/** The family called `name`. @throws when the scrape has none. */
export function family(families: Families, name: string): Families[number] {
  const found = families.find((f) => f.name === name);
  if (found === undefined) throw new Error(`no metric ${name} in ${families.map((f) => f.name).join(', ')}`);
  return found;
}

/** The value of the first sample of `name` whose labels include `labels`; undefined when none has them. */
export function sampleValue(families: Families, name: string, labels: Record<string, string> = {}): number | undefined {
  const sample = family(families, name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return sample?.value === undefined ? undefined : Number(sample.value);
}
