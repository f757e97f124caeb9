#!/usr/bin/env bash
# Makes, once per CI run, the images that the controller image test and the compose test
# (packages/server/test/image.int.spec.ts, compose.int.spec.ts) would otherwise each make:
#   TEST_NODE_BASE_IMAGE   scripts/make-node-base.sh          (this machine's node, git, busybox)
#   TEST_CONTROLLER_IMAGE  scripts/build-image.sh --prebuilt  (the checkout, compiled here)
#   TEST_POSTGRES_IMAGE    scripts/make-postgres-image.sh     (debootstrap: minutes)
#   TEST_STACK_IMAGE       scripts/make-stack-image.sh --debian (debootstrap: about 5 minutes, 1.2 GB)
# (PostgreSQL first: it needs no compiled code) and writes their `export` lines to the file
# given as first argument. .ci/run runs it in the background while the swarms start and the
# audit, typecheck and lint run, against the engine of $DOCKER_HOST.
#
# The node base, PostgreSQL and Debian stack images are kept between runs as `docker save` tarballs in
# $SVC_CI_IMAGE_CACHE (default /var/cache/svc-ci-images), each named by a hash of what it is
# made from: its script and the host's programs it copies; the PostgreSQL image's key also
# holds the ISO week (the Debian stack's too), so that Debian's updates come in within a week. A key that matches is a
# `docker load`; a miss (a new machine, a changed script) makes the image and keeps it, and the
# tarballs of older keys go. The controller image is made anew each run (it is the code under
# test). An image that cannot be made is left out of the file: its test then makes it itself
# and fails saying why.
set -uo pipefail
cd "$(dirname "$0")/.."

out="${1:?usage: $0 ENV_FILE}"
: >"$out"
cache="${SVC_CI_IMAGE_CACHE:-/var/cache/svc-ci-images}"
say() { echo "test-images: $*"; }
hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }
started=$SECONDS

# cached TAG KEY COMMAND...: loads TAG from the cache when KEY matches, else runs COMMAND and
# saves TAG there (the cache is best effort: a failure to save only costs the next run time).
cached() {
  local tag="$1" key="$2" name tarball
  shift 2
  name="$(printf '%s' "$tag" | tr '/:' '__')"
  tarball="$cache/$name-$key.tar"
  if [ -f "$tarball" ] && docker load -q -i "$tarball" >/dev/null 2>&1 && docker image inspect "$tag" >/dev/null 2>&1; then
    say "$tag loaded from $tarball"
    return 0
  fi
  "$@" || return 1
  if mkdir -p "$cache" 2>/dev/null && docker save -o "$tarball.partial" "$tag" 2>/dev/null && mv "$tarball.partial" "$tarball"; then
    find "$cache" -maxdepth 1 -name "$name-*.tar" ! -name "$name-$key.tar" -delete 2>/dev/null
    find "$cache" -maxdepth 1 -name "$name-*.tar.partial" -delete 2>/dev/null
    say "$tag made and kept as $tarball"
  else
    rm -f "$tarball.partial"
    say "$tag made; it could not be kept in $cache"
  fi
}

postgres=svc-ci/postgres:15-debian
postgres_key="$(printf '%s %s' "$(hash_of scripts/make-postgres-image.sh)" "$(date -u +%G-%V)" | sha256sum | cut -c1-16)"
if cached "$postgres" "$postgres_key" scripts/make-postgres-image.sh "$postgres"; then
  echo "export TEST_POSTGRES_IMAGE=$postgres" >>"$out"
else
  say "the PostgreSQL image could not be made"
fi

node_base=svc-ci/node-base:20-host
node_bin="$(readlink -f "$(command -v node)")"
git_bin="$(readlink -f "$(command -v git)")"
# What the script copies: node, git and busybox, the libraries node loads, the CA certificates.
# shellcheck disable=SC2046
node_key="$(hash_of scripts/make-node-base.sh "$node_bin" "$git_bin" "$(command -v busybox)" /etc/ssl/certs/ca-certificates.crt \
  $(ldd "$node_bin" 2>/dev/null | grep -o '/[^ ]*'))"
if cached "$node_base" "$node_key" scripts/make-node-base.sh "$node_base"; then
  echo "export TEST_NODE_BASE_IMAGE=$node_base" >>"$out"
  controller=svc-ci/controller:test
  # SVC_CI_BUILD_STATUS: a file where a compilation running beside this script writes its exit
  # status; the controller image is made from its output, once it is there.
  if [ -n "${SVC_CI_BUILD_STATUS:-}" ]; then
    for _ in $(seq 1 900); do [ -f "$SVC_CI_BUILD_STATUS" ] && break; sleep 1; done
    [ "$(cat "$SVC_CI_BUILD_STATUS" 2>/dev/null)" = "0" ] || say "the compilation before the controller image failed or did not end"
  fi
  if scripts/build-image.sh --prebuilt --base "$node_base" -t "$controller"; then
    echo "export TEST_CONTROLLER_IMAGE=$controller" >>"$out"
    say "$controller made"
  else
    say "the controller image could not be made"
  fi
else
  say "the node base image could not be made"
fi

# The Debian stack (the languages' buildpacks on an engine: packages/server/test/buildpacks.e2e.spec.ts).
stack=svc-ci/stack:debian
node_bin="$(readlink -f "$(command -v node)")"
stack_key="$(printf '%s %s %s' "$(hash_of scripts/make-stack-image.sh)" "$(hash_of "$node_bin")" "$(date -u +%G-%V)" | sha256sum | cut -c1-16)"
if cached "$stack" "$stack_key" scripts/make-stack-image.sh --debian "$stack"; then
  echo "export TEST_STACK_IMAGE=$stack" >>"$out"
else
  say "the Debian stack image could not be made"
fi

say "done after $((SECONDS - started)) s"
