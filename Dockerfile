# The controller image: multi-stage, production dependencies only, runs as the unprivileged
# `node` user (uid 1000), keeps its data in the /data volume, and reports healthy once
# GET /readyz answers 200 with status `ready` (the database answers and apps can run: without
# a Docker engine or the process sandbox it answers `degraded` with the reasons, unhealthy).
#
#   docker build -t svc-controller .
#
# The build stage installs with `npm ci` (the lock file decides every version), compiles the
# TypeScript and the embedded SQLite driver (node-gyp: python3, make and g++ are in the full
# node image), then drops the development dependencies. Where no registry is reachable, build
# from a context the host prepared, on a base image made from the host's node
# (docs/operations.md, "The controller image"):
#
#   scripts/make-node-base.sh svc-base/node:20-host
#   scripts/build-image.sh --prebuilt --base svc-base/node:20-host -t svc-controller
ARG NODE_IMAGE=node:20-bookworm-slim
ARG BUILD_IMAGE=node:20-bookworm

FROM ${BUILD_IMAGE} AS build
# Marks the intermediate image the legacy builder keeps, so that build-image.sh can remove it.
LABEL org.svc.stage=build
# 1: the context already holds the compiled packages and production-only node_modules.
ARG PREBUILT=0
WORKDIR /src
COPY . .
RUN set -e; \
    if [ "$PREBUILT" = 1 ]; then \
      if [ ! -f packages/server/dist/main.js ] || [ ! -d node_modules/better-sqlite3/build ]; then \
        echo "PREBUILT=1 needs the context scripts/build-image.sh --prebuilt makes" >&2; exit 1; \
      fi; \
    else \
      npm ci --no-audit --no-fund; \
      npm run build; \
      npm prune --omit=dev --no-audit --no-fund; \
    fi; \
    rm -rf packages/*/src packages/*/test packages/*/tsconfig.json packages/*/dist/.tsbuildinfo \
      node_modules/.cache node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
      node_modules/@types

FROM ${NODE_IMAGE}
# git serves `git push` deploys (git receive-pack); the official slim image has none.
RUN command -v git >/dev/null 2>&1 || { \
      apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*; \
    }
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8000 \
    DATA_DIR=/data \
    ROUTER_PORT=8080 \
    GIT_SSH_PORT=2222
WORKDIR /app
COPY --from=build /src/package.json /src/package-lock.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/packages ./packages
# The built-in buildpacks (node, static, plain) that builds of pushes without a Dockerfile use.
COPY --from=build /src/buildpacks ./buildpacks
# Writable by the controller's uid however the engine maps the volume's owner: on an engine with
# user-namespace remapping the controller keeps the host's namespace (compose.yaml) while the
# volume is given the remapped owner. Only the controller runs in this container.
# The same holds for /run/svc-router, the router's control socket's directory when the router
# runs as a service of its own (compose.yaml, a volume shared with the controller): the socket
# itself is made mode 0600 by the router, for its own uid (the controller's).
RUN mkdir -p /data /run/svc-router && chown 1000:1000 /data /run/svc-router && chmod 1777 /data /run/svc-router
USER 1000:1000
VOLUME ["/data"]
# API, router (app traffic), git over SSH.
EXPOSE 8000 8080 2222
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8000) + '/readyz').then((r) => r.json().then((b) => process.exit(r.ok && b.status === 'ready' ? 0 : (console.log(JSON.stringify(b)), 1))), () => process.exit(1))"]
# SIGTERM reaches node itself (no shell in between): in-flight requests finish, then it exits.
CMD ["node", "packages/server/dist/main.js"]
