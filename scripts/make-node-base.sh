#!/usr/bin/env bash
# Makes a Node.js base image without any registry: the host's node binary and every shared
# library it links, git (for git push deploys: git receive-pack and its helpers) with its
# libraries, busybox for a shell and the usual commands, and the CA certificates, imported
# with `docker import`. The controller's Dockerfile defaults to the official
# node:20-bookworm-slim; where no registry is reachable (CI here), build on this one instead:
#
#   scripts/make-node-base.sh [TAG]            # default TAG: svc-base/node:20-host
#   scripts/build-image.sh --prebuilt --base svc-base/node:20-host
#
# Uses the engine of $DOCKER_HOST (or the default socket). Needs node, git and busybox
# (Debian: busybox-static) on the host.
set -euo pipefail

tag="${1:-svc-base/node:20-host}"
say() { echo "make-node-base: $*" >&2; }

node_bin="$(readlink -f "$(command -v node)")" || { say "node is not on PATH"; exit 1; }
busybox_bin="$(command -v busybox || true)"
if [ -z "$busybox_bin" ] || ! "$busybox_bin" --list >/dev/null 2>&1; then
  say "busybox is missing (apt-get install busybox-static)"
  exit 1
fi
git_bin="$(readlink -f "$(command -v git)")" || { say "git is not on PATH"; exit 1; }
git_core="$(git --exec-path)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"/{bin,sbin,etc,tmp,root,home,proc,sys,dev,usr/local/bin,usr/bin}
chmod 1777 "$root/tmp"

# busybox and one link per applet, where no real program of the same name is copied later.
cp "$busybox_bin" "$root/bin/busybox"
for applet in $("$busybox_bin" --list); do
  [ "$applet" = busybox ] || ln -sf /bin/busybox "$root/bin/$applet"
done

# Copies a program or library with every shared library it needs (ldd), keeping its path.
copy_with_libs() {
  local file="$1" lib
  mkdir -p "$root$(dirname "$file")"
  cp -L "$file" "$root$file"
  for lib in $(ldd "$file" 2>/dev/null | grep -o '/[^ ]*' || true); do
    [ -e "$root$lib" ] && continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}

copy_with_libs "$node_bin"
[ "$node_bin" = /usr/local/bin/node ] || ln -sf "$node_bin" "$root/usr/local/bin/node"
# Native addons compiled against this node (better-sqlite3) need the C++ runtime it links.
copy_with_libs "$git_bin"
[ "$git_bin" = /usr/bin/git ] || ln -sf "$git_bin" "$root/usr/bin/git"
mkdir -p "$root$git_core"
cp -a "$git_core/." "$root$git_core/"
is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }
for helper in "$git_core"/*; do
  # Helpers are mostly links to git itself; the programs among the others bring their libraries.
  if [ -f "$helper" ] && [ ! -L "$helper" ] && is_elf "$helper"; then copy_with_libs "$helper"; fi
done
mkdir -p "$root/usr/share/git-core/templates"
if [ -d /usr/share/git-core/templates ]; then cp -a /usr/share/git-core/templates/. "$root/usr/share/git-core/templates/"; fi

# TLS clients (a registry, a database) verify servers against the system's CA certificates.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
fi

# The official node images have a `node` user (1000); so does this one.
printf 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000:node:/home/node:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnode:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"
mkdir -p "$root/home/node"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"

version="$("$node_bin" --version)"
tar -C "$root" --numeric-owner --owner=0 --group=0 -c . |
  docker import \
    -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/sbin' \
    -c "ENV NODE_VERSION=${version#v}" \
    -c 'CMD ["node"]' \
    -m "node ${version}, git and busybox from the host" \
    - "$tag" >/dev/null
say "made $tag (node ${version}, $(du -sh "$root" | cut -f1) unpacked)"
