/*
 * The building blocks of the OpenAPI document's entries, shared by openapi.ts and the modules
 * that hold one area's entries (openapi-domains.ts): schema shorthands, the timestamp formats,
 * paginated lists.
 */

export type Schema = Record<string, unknown>;

/** One operation's entry in the document. */
export interface Operation {
  summary: string;
  description?: string;
  /** The JSON request body schema, when the operation takes one. */
  body?: Schema;
  /** The success status and its body: a component name, `null` for none, or a schema. */
  status: number;
  response: string | null | Schema;
  /** Query parameters. */
  query?: Array<{ name: string; description: string; schema: Schema }>;
  tag: string;
}

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const TIMESTAMP: Schema = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}UTC$', description: '`YYYY-MM-DDTHH:MM:SSUTC`' };
export const ISO: Schema = { type: 'string', format: 'date-time', description: 'ISO 8601 with milliseconds and `Z`' };
export const STRING_MAP: Schema = { type: 'object', additionalProperties: { type: 'string' } };
export const object = (properties: Record<string, Schema>, required = Object.keys(properties)): Schema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
/** A request body's properties, `required` naming the mandatory ones. */
export const props = (properties: Record<string, Schema>, required: string[] = []): Schema => ({ type: 'object', properties, required });

/** A paginated list of `item`. */
export function pageOf(item: string): Schema {
  return object({
    count: { type: 'integer', minimum: 0 },
    next: { type: ['string', 'null'] },
    previous: { type: ['string', 'null'] },
    results: { type: 'array', items: ref(item) },
  });
}

export const PAGE_QUERY = [
  { name: 'page', description: '1-based page number.', schema: { type: 'integer', minimum: 1 } },
  { name: 'page_size', description: 'Results per page, 1..1000 (larger is clamped); honoured from 1.6, ignored before.', schema: { type: 'integer', minimum: 1 } },
];

/** A paginated `GET` of `item`s. */
export const list = (summary: string, item: string, tag: string): Operation => ({ summary, status: 200, response: pageOf(item), query: PAGE_QUERY, tag });
