import { TIMESTAMP, list, object, props, type Operation, type Schema } from './openapi-schema';

/*
 * The OpenAPI entries of the names an app is reached by and of the keys and certificates that
 * go with them: custom domains, the automatic HTTPS state of each name (an extension), the
 * users' SSH keys and the uploaded certificates (1.2+).
 */

export const DOMAIN_SCHEMAS = {
  AppTls: object({
    app: { type: 'string' },
    https_redirect: { type: 'boolean', description: 'Plain HTTP is answered 308 to HTTPS once a name has a certificate (the ACME challenge path excepted).' },
    automatic: { type: 'boolean', description: 'Whether the controller obtains certificates over ACME (ACME_DIRECTORY_URL).' },
    names: {
      type: 'array',
      items: object({
        name: { type: 'string' },
        state: { type: 'string', enum: ['none', 'pending', 'issued', 'failed'] },
        source: { oneOf: [{ type: 'string', enum: ['acme', 'uploaded'] }, { type: 'null' }], description: '`uploaded`: a certificate uploaded through /v1/certs serves the name (it always wins).' },
        expires: { oneOf: [TIMESTAMP, { type: 'null' }] },
        reason: { oneOf: [{ type: 'string' }, { type: 'null' }], description: 'Why the last attempt failed.' },
        next_attempt: { oneOf: [TIMESTAMP, { type: 'null' }], description: 'When a failed or pending name is tried again.' },
      }),
    },
  }),
  Domain: object({
    app: { type: 'string' },
    domain: { type: 'string' },
    owner: { type: 'string' },
    uuid: { type: 'string', format: 'uuid' },
    created: TIMESTAMP,
    updated: TIMESTAMP,
  }),
  Key: object({
    id: { type: 'string' },
    public: { type: 'string' },
    fingerprint: { type: 'string', pattern: '^SHA256:' },
    owner: { type: 'string' },
    uuid: { type: 'string', format: 'uuid' },
    created: TIMESTAMP,
    updated: TIMESTAMP,
  }),
  CertificateItem: object({ common_name: { type: 'string' }, expires: TIMESTAMP }),
  Certificate: object({
    id: { type: 'integer' },
    common_name: { type: 'string' },
    owner: { type: 'string' },
    expires: TIMESTAMP,
    starts: TIMESTAMP,
    issuer: { type: 'string' },
    san: { type: 'array', items: { type: 'string' } },
    fingerprint: { type: 'string' },
    created: TIMESTAMP,
    updated: TIMESTAMP,
  }),} satisfies Record<string, Schema>;

export const DOMAIN_OPERATIONS: Record<string, Operation> = {
  'GET /v1/apps/:id/domains': list("List an app's domains", 'Domain', 'domains'),
  'POST /v1/apps/:id/domains': {
    summary: 'Add a domain',
    description: 'A name under a domain that an app of another owner has is refused 403 unless the caller manages that app.',
    body: props({ domain: { type: 'string' } }, ['domain']),
    status: 201,
    response: 'Domain',
    tag: 'domains',
  },
  'DELETE /v1/apps/:id/domains/:domain': { summary: 'Remove a domain', status: 204, response: null, tag: 'domains' },
  'GET /v1/apps/:id/tls': {
    summary: "The TLS state of each of an app's names (extension: automatic HTTPS)",
    description: 'Custom domains and `<app>.<platform domain>`: none, pending, issued (with expiry), failed (with reason). Not part of the seed API.',
    status: 200,
    response: 'AppTls',
    tag: 'domains',
  },
  'POST /v1/apps/:id/tls': {
    summary: "Change an app's HTTPS setting (extension: automatic HTTPS)",
    description: '`https_redirect: true` answers plain HTTP with 308 to HTTPS for each name that has a certificate.',
    body: props({ https_redirect: { type: 'boolean' } }, ['https_redirect']),
    status: 200,
    response: 'AppTls',
    tag: 'domains',
  },
  'GET /v1/keys': list("List the caller's SSH keys", 'Key', 'keys'),
  'POST /v1/keys': { summary: 'Add an SSH public key', body: props({ id: { type: 'string' }, public: { type: 'string' } }, ['id', 'public']), status: 201, response: 'Key', tag: 'keys' },
  'DELETE /v1/keys/:id': { summary: 'Remove an SSH key', status: 204, response: null, tag: 'keys' },
  'GET /v1/certs': list('List certificates (1.2+)', 'CertificateItem', 'certificates'),
  'POST /v1/certs': {
    summary: 'Add a certificate and its private key (1.2+)',
    description: '`common_name` is honoured from 1.3.',
    body: props({ certificate: { type: 'string' }, key: { type: 'string' }, common_name: { type: 'string' } }, ['certificate', 'key']),
    status: 201,
    response: 'Certificate',
    tag: 'certificates',
  },
  'GET /v1/certs/:common_name': { summary: 'Show a certificate (1.2+)', status: 200, response: 'Certificate', tag: 'certificates' },
  'DELETE /v1/certs/:common_name': { summary: 'Remove a certificate (1.2+)', status: 204, response: null, tag: 'certificates' },};
