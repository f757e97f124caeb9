#!/usr/bin/env bash
# Makes the stack image that pushes without a Dockerfile are built on and run in
# (STACK_IMAGE), offline: the host's node binary with the shared libraries it loads, the
# host's npm, busybox's shell and applets, the CA certificates, and an `app` user (uid/gid
# 10000, the user builds and apps run as, whose HOME /app it owns), imported into the engine
# as one layer. Nothing is downloaded.
#
#   scripts/make-stack-image.sh [image]        # default: $STACK_IMAGE or localhost/svc-stack:latest
#   scripts/make-stack-image.sh --if-engine [image]
#   scripts/make-stack-image.sh --debian [image]   # default image: localhost/svc-stack:debian
#
# --debian: the same node, npm and app user on a Debian bookworm root made by debootstrap from
# Debian's packages (no image registry), with what apps in other languages build and run with:
# a C/C++ toolchain, make, pkg-config, git, Python 3 with venv and pip, Go, Ruby with bundler,
# e2fsprogs (the bounded build volumes), the common -dev headers (libpq, libssl, zlib, libffi, sqlite) and node's own headers (in
# /usr/local/include/node, so node-gyp compiles native addons without downloading them). One
# image builds and runs (STACK_IMAGE=localhost/svc-stack:debian). Needs root and debootstrap;
# DEBIAN_MIRROR and DEBOOTSTRAP_CACHE as for scripts/make-postgres-image.sh. Size and time:
# docs/operations.md, "The Debian stack".
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
debian=0
if [ "${1:-}" = "--if-engine" ]; then if_engine=1; shift; fi
if [ "${1:-}" = "--debian" ]; then debian=1; shift; fi
if [ "$debian" = 1 ]; then image="${1:-localhost/svc-stack:debian}"; else image="${1:-${STACK_IMAGE:-localhost/svc-stack:latest}}"; fi
# What the Debian stack holds besides debootstrap's minimal base.
DEBIAN_PACKAGES=ca-certificates,e2fsprogs,git,build-essential,pkg-config,python3,python3-venv,python3-pip,python3-dev,golang-go,ruby,ruby-dev,bundler,libpq-dev,libssl-dev,zlib1g-dev,libffi-dev,libsqlite3-dev
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
if [ "$debian" = 1 ]; then
  command -v debootstrap >/dev/null || { echo "debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
  [ "$(id -u)" = 0 ] || { echo "debootstrap needs root" >&2; exit 1; }
elif [ ! -x "$busybox" ]; then
  echo "no busybox at '$busybox': apt-get install -y busybox-static, or set BUSYBOX" >&2
  exit 1
elif ldd "$busybox" >/dev/null 2>&1; then
  echo "$busybox is linked dynamically; use a static busybox (Debian's busybox-static)" >&2
  exit 1
fi
command -v docker >/dev/null || { echo "the docker client is needed to import the image" >&2; exit 1; }

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
if [ "$debian" = 1 ]; then
  mirror="${DEBIAN_MIRROR:-}"
  if [ -z "$mirror" ]; then
    mirror="$(grep -hsoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* |
      grep -oE 'https?://[^ ]+' | head -n 1 || true)"
    mirror="${mirror:-http://deb.debian.org/debian}"
  fi
  cache_args=()
  if [ -n "${DEBOOTSTRAP_CACHE:-}" ]; then
    mkdir -p "$DEBOOTSTRAP_CACHE"
    cache_args=(--cache-dir="$(cd "$DEBOOTSTRAP_CACHE" && pwd)")
  fi
  echo "debootstrap bookworm with the build tools and languages from $mirror (minutes)" >&2
  debootstrap --variant=minbase --include="$DEBIAN_PACKAGES" "${cache_args[@]}" bookworm "$root" "$mirror" >"$root.log" 2>&1 || {
    tail -n 20 "$root.log" >&2
    echo "debootstrap failed" >&2
    rm -f "$root.log"
    exit 1
  }
  rm -f "$root.log"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* "$root"/usr/share/man/*
fi
mkdir -p "$root/bin" "$root/usr/bin" "$root/usr/local/bin" "$root/usr/local/lib/node_modules" "$root/usr/local/etc" \
  "$root/etc/ssl/certs" "$root/tmp" "$root/app" "$root/root"
chmod 1777 "$root/tmp"

if [ "$debian" = 0 ]; then
  cp "$busybox" "$root/bin/busybox"
  for applet in $("$busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  # npm's and npx's scripts start with `#!/usr/bin/env node`.
  ln -s /bin/busybox "$root/usr/bin/env"
else
  # node's headers, for node-gyp (the Node.js buildpack gives it PREFIX/include/node).
  node_headers="$(dirname "$(dirname "$node_bin")")/include/node"
  [ -f "$node_headers/node.h" ] || { echo "no Node.js headers at $node_headers (they come with node's package)" >&2; exit 1; }
  mkdir -p "$root/usr/local/include"
  cp -a "$node_headers" "$root/usr/local/include/node"
fi

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
# (Debian's own, where the Debian root has them.)
for lib in $(ldd "$node_bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
  [ "$debian" = 1 ] && [ -e "$root$lib" ] && continue
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

if [ "$debian" = 1 ]; then
  # The host's CA certificates, as in the busybox stack (an operator's own CA, such as a company
  # proxy's, included), in place of Debian's bundle.
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  # Debian's users stay; the app user is added.
  printf 'app:x:%d:%d:app:/app:/bin/sh\n' "$app_uid" "$app_uid" >>"$root/etc/passwd"
  printf 'app:x:%d:\n' "$app_uid" >>"$root/etc/group"
else
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/bin/sh\napp:x:%d:%d:app:/app:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' "$app_uid" "$app_uid" >"$root/etc/passwd"
  printf 'root:x:0:\napp:x:%d:\nnogroup:x:65534:\n' "$app_uid" >"$root/etc/group"
fi

# One layer: everything owned by root, except /app (the app user's home and the build
# directory), owned by the app user; tar sets the owners, so no chown (nor root) is needed.
layer="$root.tar"
trap 'rm -rf "$root" "$layer"' EXIT
if [ "$debian" = 1 ]; then
  # Debian's files keep the owners its packages gave them.
  (cd "$root" && tar --numeric-owner -cf "$layer" $(ls -A | grep -vx app))
else
  (cd "$root" && tar --numeric-owner --owner=0 --group=0 -cf "$layer" $(ls -A | grep -vx app))
fi
(cd "$root" && tar --numeric-owner --owner="$app_uid" --group="$app_uid" -rf "$layer" app)
# Debian keeps its system tools (mke2fs, losetup: the bounded build volumes' helper) in the sbin directories.
if [ "$debian" = 1 ]; then path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; else path=/usr/local/bin:/usr/bin:/bin; fi
docker import \
  --change "ENV PATH=$path" \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'WORKDIR /app' \
  --change 'CMD ["/bin/sh"]' \
  "$layer" "$image" >/dev/null
echo "$image: node $("$node_bin" --version) and npm $("$node_bin" "$npm_dir/bin/npm-cli.js" --version) on $([ "$debian" = 1 ] && echo "Debian bookworm with the build tools and languages" || echo busybox), $(docker image inspect --format '{{.Size}}' "$image") bytes"
