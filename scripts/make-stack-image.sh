#!/usr/bin/env bash
# Makes the stack image that Procfile-only pushes are laid onto (STACK_IMAGE), offline:
# the host's node binary with the shared libraries it loads, busybox's shell and applets,
# the CA certificates, and an `app` user (uid/gid 10000, the user apps run as), imported
# into the engine as one layer. Nothing is downloaded.
#
#   scripts/make-stack-image.sh [image]        # default: $STACK_IMAGE or svc/stack:latest
#
# Environment: DOCKER_HOST (the engine, as for the docker client), NODE_BINARY (default: the
# node on PATH), BUSYBOX (default: /bin/busybox, from Debian's busybox-static).
set -euo pipefail

image="${1:-${STACK_IMAGE:-svc/stack:latest}}"
node_bin="$(readlink -f "${NODE_BINARY:-$(command -v node)}")"
busybox="${BUSYBOX:-/bin/busybox}"
app_uid=10000

[ -x "$node_bin" ] || { echo "no node binary at '$node_bin' (set NODE_BINARY)" >&2; exit 1; }
[ -x "$busybox" ] || { echo "no busybox at '$busybox': apt-get install -y busybox-static, or set BUSYBOX" >&2; exit 1; }
if ldd "$busybox" >/dev/null 2>&1; then
  echo "$busybox is linked dynamically; use a static busybox (Debian's busybox-static)" >&2
  exit 1
fi
command -v docker >/dev/null || { echo "the docker client is needed to import the image" >&2; exit 1; }

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp" "$root/app" "$root/root"
chmod 1777 "$root/tmp"

cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done

cp "$node_bin" "$root/usr/local/bin/node"
# The libraries node loads, and the dynamic loader itself, at the paths the binary names.
for lib in $(ldd "$node_bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

[ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/bin/sh\napp:x:%d:%d:app:/app:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' "$app_uid" "$app_uid" >"$root/etc/passwd"
printf 'root:x:0:\napp:x:%d:\nnogroup:x:65534:\n' "$app_uid" >"$root/etc/group"
chown "$app_uid:$app_uid" "$root/app" 2>/dev/null || true

tar --numeric-owner -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'WORKDIR /app' \
  --change 'CMD ["/bin/sh"]' \
  - "$image" >/dev/null
echo "$image: node $("$node_bin" --version) on busybox, $(docker image inspect --format '{{.Size}}' "$image") bytes"
