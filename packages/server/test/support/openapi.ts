import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import type { HttpResponse } from './client';

const DOCUMENT_ID = 'https://controller.invalid/openapi.json';

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>> };

const pointer = (...parts: string[]): string => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/**
 * Checks real responses against the OpenAPI document the controller serves: the path and
 * method must be documented, the status must be one of the operation's responses, and a JSON
 * body must match that response's schema (JSON Schema 2020-12, with formats).
 */
export class ContractValidator {
  private readonly ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
  private readonly templates: Array<{ template: string; pattern: RegExp; params: number }>;
  private readonly compiled = new Map<string, ValidateFunction>();
  /** `METHOD template status` of every response checked. */
  readonly seen = new Set<string>();

  constructor(private readonly doc: Doc) {
    addFormats(this.ajv);
    this.ajv.addSchema(doc as object, DOCUMENT_ID);
    this.templates = Object.keys(doc.paths)
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
        params: (template.match(/\{/g) ?? []).length,
      }))
      .sort((a, b) => a.params - b.params);
  }

  /** The documented path template a request path belongs to, for a method. */
  templateOf(method: string, path: string): string {
    const bare = path.split('?')[0] as string;
    const found = this.templates.find((t) => t.pattern.test(bare) && this.doc.paths[t.template]?.[method.toLowerCase()] !== undefined);
    if (found === undefined) throw new Error(`${method} ${bare} is not in the OpenAPI document`);
    return found.template;
  }

  /** Validates one response; throws with the schema errors when it does not match. */
  check(method: string, path: string, res: HttpResponse<unknown>): void {
    const template = this.templateOf(method, path);
    const operation = this.doc.paths[template]?.[method.toLowerCase()];
    const documented = operation?.responses[String(res.status)];
    if (documented === undefined) throw new Error(`${method} ${path} answered ${res.status}, which the document does not list for ${template}`);
    this.seen.add(`${method.toUpperCase()} ${template} ${res.status}`);
    const media = documented.content === undefined ? undefined : Object.keys(documented.content).find((type) => res.contentType.startsWith(type));
    if (documented.content === undefined) {
      if (res.text !== '') throw new Error(`${method} ${path} ${res.status}: the document says no body, got ${res.text.slice(0, 200)}`);
      return;
    }
    if (media === undefined) throw new Error(`${method} ${path} ${res.status}: content type ${res.contentType} is not documented`);
    if (media !== 'application/json') return;
    const key = `${template} ${method} ${res.status}`;
    let validate = this.compiled.get(key);
    if (validate === undefined) {
      const ref = `${DOCUMENT_ID}#/${pointer('paths', template, method.toLowerCase(), 'responses', String(res.status), 'content', media, 'schema')}`;
      validate = this.ajv.compile({ $ref: ref });
      this.compiled.set(key, validate);
    }
    if (!validate(res.body)) {
      throw new Error(`${method} ${path} ${res.status} does not match the document: ${this.ajv.errorsText(validate.errors)}\n${res.text.slice(0, 500)}`);
    }
  }
}
