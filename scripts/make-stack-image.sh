#!/usr/bin/env bash
# Makes the stack image that pushes without a Dockerfile are built on and run in
# (STACK_IMAGE), offline: the host's node binary with the shared libraries it loads, the
# host's npm, busybox's shell and applets, the CA certificates, and an `app` user (uid/gid
# 10000, the user builds and apps run as, whose HOME /app it owns), imported into the engine
# as one layer. Nothing is downloaded.
#
#   scripts/make-stack-image.sh [image]        # default: $STACK_IMAGE or localhost/svc-stack:latest
#   scripts/make-stack-image.sh --if-engine [image]
#
# --if-engine (the README's API walk): does nothing where no Docker engine answers (the
# process scheduler runs no image) or where the image is already there.
#
# The default name is under `localhost/`: an image reference without a registry host is a
# Docker Hub name (`svc/stack` is docker.io/svc/stack, a namespace this project does not
# own), so an engine missing the image would pull whatever someone published there. A name
# whose registry is `localhost` never leaves the machine: without the image, a pull fails.
#
# Environment: DOCKER_HOST (the engine, as for the docker client), NODE_BINARY (default: the
# node on PATH), NPM_DIR (default: the npm package of that node, `$(npm root -g)/npm`),
# BUSYBOX (default: /bin/busybox, from Debian's busybox-static).
set -euo pipefail

if_engine=0
if [ "${1:-}" = "--if-engine" ]; then if_engine=1; shift; fi
image="${1:-${STACK_IMAGE:-localhost/svc-stack:latest}}"
if [ "$if_engine" = 1 ]; then
  if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
    echo "no Docker engine answers${DOCKER_HOST:+ at $DOCKER_HOST}: no stack image needed" >&2
    exit 0
  fi
  if docker image inspect "$image" >/dev/null 2>&1; then
    echo "$image is there" >&2
    exit 0
  fi
fi
node_bin="$(readlink -f "${NODE_BINARY:-$(command -v node)}")"
npm_dir="${NPM_DIR:-$(npm root -g 2>/dev/null)/npm}"
busybox="${BUSYBOX:-/bin/busybox}"
app_uid=10000

[ -x "$node_bin" ] || { echo "no node binary at '$node_bin' (set NODE_BINARY)" >&2; exit 1; }
[ -f "$npm_dir/bin/npm-cli.js" ] && [ -f "$npm_dir/node_modules/semver/package.json" ] || {
  echo "no npm package at '$npm_dir' (set NPM_DIR to the directory of npm's package.json)" >&2
  exit 1
}
[ -x "$busybox" ] || { echo "no busybox at '$busybox': apt-get install -y busybox-static, or set BUSYBOX" >&2; exit 1; }
if ldd "$busybox" >/dev/null 2>&1; then
  echo "$busybox is linked dynamically; use a static busybox (Debian's busybox-static)" >&2
  exit 1
fi
command -v docker >/dev/null || { echo "the docker client is needed to import the image" >&2; exit 1; }

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/usr/bin" "$root/usr/local/bin" "$root/usr/local/lib/node_modules" "$root/usr/local/etc" \
  "$root/etc/ssl/certs" "$root/tmp" "$root/app" "$root/root"
chmod 1777 "$root/tmp"

cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done

# npm's and npx's scripts start with `#!/usr/bin/env node`.
ln -s /bin/busybox "$root/usr/bin/env"

cp "$node_bin" "$root/usr/local/bin/node"
# npm as a global install of this node (prefix /usr/local): its own semver serves the
# Node.js buildpack's engines.node check.
mkdir "$root/usr/local/lib/node_modules/npm"
cp -a "$npm_dir/." "$root/usr/local/lib/node_modules/npm/"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
# npm's global configuration: no update checks, no funding notices.
printf 'update-notifier=false\nfund=false\n' >"$root/usr/local/etc/npmrc"
# The libraries node loads, and the dynamic loader itself, at the paths the binary names.
for lib in $(ldd "$node_bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

[ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/bin/sh\napp:x:%d:%d:app:/app:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' "$app_uid" "$app_uid" >"$root/etc/passwd"
printf 'root:x:0:\napp:x:%d:\nnogroup:x:65534:\n' "$app_uid" >"$root/etc/group"

# One layer: everything owned by root, except /app (the app user's home and the build
# directory), owned by the app user; tar sets the owners, so no chown (nor root) is needed.
layer="$root.tar"
trap 'rm -rf "$root" "$layer"' EXIT
(cd "$root" && tar --numeric-owner --owner=0 --group=0 -cf "$layer" $(ls -A | grep -vx app))
(cd "$root" && tar --numeric-owner --owner="$app_uid" --group="$app_uid" -rf "$layer" app)
docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'WORKDIR /app' \
  --change 'CMD ["/bin/sh"]' \
  "$layer" "$image" >/dev/null
echo "$image: node $("$node_bin" --version) and npm $("$node_bin" "$npm_dir/bin/npm-cli.js" --version) on busybox, $(docker image inspect --format '{{.Size}}' "$image") bytes"
