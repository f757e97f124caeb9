import type { Operation, Schema } from './openapi-schema';

/*
 * The OpenAPI entry of `GET /v1/platform`, an extension at every version: where clients
 * reach the apps (scheme and port of the router, which an Application's `url`, a host name by
 * contract, does not carry) and the git server. No other response changes.
 */

const object = (properties: Record<string, Schema>): Schema => ({ type: 'object', properties, required: Object.keys(properties), additionalProperties: false });
const PORT: Schema = { type: 'integer', minimum: 1, maximum: 65535 };

export const PLATFORM_SCHEMAS: Record<string, Schema> = {
  Platform: object({
    platform_domain: { type: 'string', description: '`PLATFORM_DOMAIN`: an app is reached at the host `<id>.<platform_domain>` (its `url`).' },
    apps: {
      description: 'Where clients reach the apps; null when this controller process neither runs the router nor is told (`APPS_URL_SCHEME`, `APPS_URL_PORT`).',
      oneOf: [
        object({
          scheme: { enum: ['http', 'https'] },
          port: { ...PORT, description: 'The public port: `APPS_URL_PORT`, else the port the router listens on for that scheme.' },
          url_template: { type: 'string', description: 'An app\'s URL with `{app}` for its id, without the port when it is the scheme\'s default: `http://{app}.localhost:8080`.' },
        }),
        { type: 'null' },
      ],
    },
    git: {
      description: 'The git SSH server (`git push` deploys); null when it is off.',
      oneOf: [
        object({
          host: { type: 'string', description: 'The host name this request reached the API by.' },
          port: PORT,
          remote_template: { type: 'string', description: 'A git remote with `{app}` for the app\'s id: `ssh://git@<host>:<port>/{app}.git`.' },
        }),
        { type: 'null' },
      ],
    },
  }),
};

export const PLATFORM_OPERATIONS: Record<string, Operation> = {
  'GET /v1/platform': {
    summary: "Where the apps and the git server are reached: the router's public scheme and port, the git remote (extension)",
    description: "An app's `url` is a host name; a client makes its link with this answer's `apps` (`<scheme>://<url>:<port>`, no port for 80 and 443).",
    status: 200,
    response: 'Platform',
    tag: 'platform',
  },
};
