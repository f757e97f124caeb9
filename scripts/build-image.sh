#!/usr/bin/env bash
# Builds the controller image from the Dockerfile.
#
#   scripts/build-image.sh [-t TAG] [--base IMAGE]               # as `docker build .`: installs and compiles in the image
#   scripts/build-image.sh --prebuilt --base IMAGE [-t TAG]      # no registry needed
#
# --prebuilt: after `npm ci` on this machine, compiles the packages here (`npm run build`),
# stages a build context with the manifests, the compiled packages and a copy of node_modules
# pruned to the production dependencies (`npm prune --omit=dev`: nothing is downloaded or
# compiled again), and builds with PREBUILT=1, both stages on IMAGE (a node image, e.g. the
# one scripts/make-node-base.sh makes). The native SQLite driver is the one compiled here, so
# IMAGE must have the same Node.js major version and a glibc at least as recent as this
# machine's (make-node-base.sh copies this machine's own).
#
# --base without --prebuilt replaces the runtime stage's base (NODE_IMAGE) only.
# Uses the engine of $DOCKER_HOST (or the default socket).
set -euo pipefail
cd "$(dirname "$0")/.."

tag="svc-controller:latest"
base=""
prebuilt=0
while [ $# -gt 0 ]; do
  case "$1" in
    -t|--tag) tag="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    --prebuilt) prebuilt=1; shift ;;
    *) echo "usage: $0 [--prebuilt] [--base IMAGE] [-t TAG]" >&2; exit 2 ;;
  esac
done
say() { echo "build-image: $*" >&2; }

if [ "$prebuilt" = 0 ]; then
  docker build ${base:+--build-arg "NODE_IMAGE=$base"} -t "$tag" .
  docker image prune -f --filter label=org.svc.stage=build >/dev/null || true
  exit 0
fi

[ -n "$base" ] || { say "--prebuilt needs --base IMAGE (e.g. from scripts/make-node-base.sh)"; exit 2; }
[ -d node_modules/better-sqlite3 ] || { say "run npm ci first"; exit 1; }
npm run build >/dev/null

context="$(mktemp -d "${TMPDIR:-/tmp}/svc-image.XXXXXX")"
trap 'rm -rf "$context"' EXIT
cp Dockerfile package.json package-lock.json "$context/"
# The built-in buildpacks are files the controller runs builds with.
cp -a buildpacks "$context/"
for dir in packages/*/; do
  name="$(basename "$dir")"
  mkdir -p "$context/packages/$name"
  cp "$dir/package.json" "$context/packages/$name/"
  if [ -d "$dir/dist" ]; then cp -a "$dir/dist" "$context/packages/$name/"; fi
  # The dashboard's page, stylesheet and compiled scripts (docs/dashboard.md).
  if [ -d "$dir/public" ]; then cp -a "$dir/public" "$context/packages/$name/"; fi
done
# Hard links where possible (same file system): a copy of node_modules costs no space. npm
# prune only unlinks what it removes, and its record of the tree is rewritten, not edited:
# the checkout's own files are never touched.
cp -al node_modules "$context/" 2>/dev/null || { rm -rf "$context/node_modules"; cp -a node_modules "$context/"; }
rm -f "$context/node_modules/.package-lock.json"
(cd "$context" && npm prune --omit=dev --no-audit --no-fund --ignore-scripts >/dev/null)
say "context: $(du -sh "$context" | cut -f1) (production dependencies and compiled packages)"

docker build \
  --build-arg PREBUILT=1 \
  --build-arg "BUILD_IMAGE=$base" \
  --build-arg "NODE_IMAGE=$base" \
  -t "$tag" \
  "$context"
# The build stage's image is left untagged by the legacy builder: remove it (only ours).
docker image prune -f --filter label=org.svc.stage=build >/dev/null || true
