#!/usr/bin/env bash
# A private Docker engine and registry for the tests, started from nothing (no systemd).
#
# Source it from .ci/run:   source .ci/docker-engine.sh && docker_engine_start
# or run it by hand:        .ci/docker-engine.sh images   (only makes the test images, against
#                           $DOCKER_HOST, e.g. unix:///run/svcdev-docker/docker.sock)
#
# docker_engine_start installs docker.io, docker-registry and busybox-static with apt when they
# are missing, starts dockerd with its own data root, exec root, pid file and unix socket under
# a temporary directory (never the machine's own engine), waits for it, makes the images the
# tests need without any public registry:
#   svc-test/busybox:1  busybox-static with its applets (sh, httpd, nc, wget, ...), CMD sh
#   svc-test/node:20    the host's node binary and the shared libraries it needs, plus busybox
# starts Debian's docker-registry on a free 127.0.0.1 port and exports
#   TEST_DOCKER_HOST  unix://<dir>/docker.sock
#   TEST_REGISTRY     127.0.0.1:<port>   (the engine trusts 127.0.0.0/8 registries over http)
# docker_engine_stop kills the registry and dockerd by pid and removes the directory; the
# start installs it as an EXIT trap chained after any trap already set.
#
# The engine's default bridge is a bridge of its own (svcci<pid>, made here and deleted at the
# stop), never docker0: another engine on the machine may own docker0, and `--bridge=none`
# would make dockerd delete it. It keeps --iptables on: the isolation of the apps' network (no
# traffic between containers, none to the host) is made of iptables rules. Note that dockerd
# re-creates the nat DOCKER chain when it starts: another engine's DNAT rules for published
# ports go (its ports published on 127.0.0.1 keep working through docker-proxy).

docker_engine_log() { echo "::: docker: $*"; }

# Makes the test images in the engine at $DOCKER_HOST (or the default socket).
docker_engine_images() {
  local busybox
  busybox="$(command -v busybox || true)"
  if [ -z "$busybox" ] || ! "$busybox" --list >/dev/null 2>&1; then
    docker_engine_log "busybox is missing: install busybox-static"
    return 1
  fi
  local work
  work="$(mktemp -d)"
  # A minimal root: busybox and a link per applet, /etc/passwd and /etc/group with root and
  # nobody, a world-writable /tmp.
  local root="$work/busybox"
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/home" "$root/proc" "$root/sys" "$root/dev"
  chmod 1777 "$root/tmp"
  cp "$busybox" "$root/bin/busybox"
  local applet
  for applet in $("$busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  mkdir -p "$root/usr"
  ln -s ../bin "$root/usr/bin"
  ln -s ../bin "$root/sbin"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  tar -C "$root" -c . | docker import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/bin' - svc-test/busybox:1 >/dev/null || {
    rm -rf "$work"
    return 1
  }

  # The node image: the same root plus the host's node and every library it links.
  local node
  node="$(command -v node || true)"
  if [ -n "$node" ]; then
    node="$(readlink -f "$node")"
    local noderoot="$work/node"
    cp -a "$root" "$noderoot"
    mkdir -p "$noderoot/usr/local/bin"
    rm -f "$noderoot/usr/bin"
    mkdir -p "$noderoot/usr/bin"
    cp "$node" "$noderoot/usr/local/bin/node"
    local lib
    for lib in $(ldd "$node" | grep -o '/[^ ]*'); do
      mkdir -p "$noderoot$(dirname "$lib")"
      cp -L "$lib" "$noderoot$lib"
    done
    tar -C "$noderoot" -c . | docker import -c 'CMD ["node"]' -c 'ENV PATH=/usr/local/bin:/bin' - svc-test/node:20 >/dev/null || {
      rm -rf "$work"
      return 1
    }
  else
    docker_engine_log "node is not on PATH: svc-test/node:20 not made"
  fi
  rm -rf "$work"
  docker_engine_log "images: svc-test/busybox:1 svc-test/node:20"
}

# A port free on the given address (127.0.0.1 by default).
docker_engine_free_port() {
  node -e 'const s=require("net").createServer().listen(0,process.argv[1],()=>{console.log(s.address().port);s.close();});' "${1:-127.0.0.1}"
}

# Starts Debian's docker-registry on <addr:port>, storing under <dir>/registry, its pid in
# <dir>/registry.pid (the stop functions kill it), and waits until it answers. With a third
# argument, an htpasswd file (bcrypt), it takes no request without one of its logins.
docker_registry_start() {
  local dir="$1" addr="$2" htpasswd="${3:-}"
  mkdir -p "$dir/registry"
  cat >"$dir/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/registry
  delete:
    enabled: true
http:
  addr: $addr
EOF
  if [ -n "$htpasswd" ]; then
    printf 'auth:\n  htpasswd:\n    realm: svc-ci\n    path: %s\n' "$htpasswd" >>"$dir/registry.yml"
  fi
  docker-registry serve "$dir/registry.yml" >"$dir/registry.log" 2>&1 &
  echo $! >"$dir/registry.pid"
  # A registry with a login answers 401 to the anonymous probe: it is up all the same.
  local expected=200 _
  [ -n "$htpasswd" ] && expected=401
  for _ in $(seq 1 30); do
    if node -e 'require("http").get(process.argv[1],r=>process.exit(r.statusCode===Number(process.argv[2])?0:1)).on("error",()=>process.exit(1))' "http://$addr/v2/" "$expected"; then return 0; fi
    sleep 0.5
  done
  docker_engine_log "docker-registry did not answer on $addr; its log:"
  tail -n 30 "$dir/registry.log"
  return 1
}

docker_engine_stop() {
  local dir="${SVC_CI_DOCKER_DIR:-}"
  [ -n "$dir" ] || return 0
  if [ -f "$dir/registry.pid" ]; then kill "$(cat "$dir/registry.pid")" 2>/dev/null || true; fi
  if [ -S "$dir/docker.sock" ] && command -v docker >/dev/null 2>&1; then
    # The networks tests left (a build network, say) keep their Linux bridges on the host after
    # the engine stops, where the next engine's network of the same bridge name would find them:
    # they are removed first, with the containers that hold them.
    local left
    left="$(DOCKER_HOST="unix://$dir/docker.sock" timeout 30 docker ps -aq 2>/dev/null || true)"
    # shellcheck disable=SC2086
    [ -z "$left" ] || DOCKER_HOST="unix://$dir/docker.sock" timeout 60 docker rm -f $left >/dev/null 2>&1 || true
    DOCKER_HOST="unix://$dir/docker.sock" timeout 60 docker network prune -f >/dev/null 2>&1 || true
  fi
  if [ -f "$dir/dockerd.pid" ]; then
    local pid
    pid="$(cat "$dir/dockerd.pid")"
    # Containers left behind go with the engine's data root; dockerd stops its containerd.
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  # Whatever the engine left mounted under its directory: its data root's mounts, and the
  # network namespace it keeps under its exec root (deepest first).
  awk -v dir="$dir/" 'index($2, dir) == 1 { print $2 }' /proc/mounts | sort -r | while read -r mount; do
    umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true
  done
  if [ -n "${SVC_CI_DOCKER_BRIDGE:-}" ]; then
    # dockerd leaves the rules of a bridge it did not make; they go with the bridge.
    local table rule
    for table in filter nat; do
      iptables -t "$table" -S 2>/dev/null | grep -- "$SVC_CI_DOCKER_BRIDGE" | sed 's/^-A/-D/' | while read -r rule; do
        eval "iptables -t $table $rule" 2>/dev/null || true
      done
    done
    ip link delete "$SVC_CI_DOCKER_BRIDGE" 2>/dev/null || true
  fi
  rm -rf "$dir" 2>/dev/null || true
  SVC_CI_DOCKER_DIR=
}

docker_engine_start() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
  command -v busybox >/dev/null 2>&1 || missing+=(busybox-static)
  if [ "${#missing[@]}" -gt 0 ]; then
    docker_engine_log "installing ${missing[*]}"
    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}") >/dev/null ||
      { docker_engine_log "could not install ${missing[*]}: the Docker tests will fail"; return 1; }
  fi

  SVC_CI_DOCKER_DIR="$(mktemp -d /tmp/svc-ci-docker.XXXXXX)"
  export SVC_CI_DOCKER_DIR
  local dir="$SVC_CI_DOCKER_DIR"
  local previous_trap
  previous_trap="$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")"
  # shellcheck disable=SC2064
  trap "docker_engine_stop; ${previous_trap:-true}" EXIT

  # Its own default bridge, on a subnet no route of the machine uses yet.
  SVC_CI_DOCKER_BRIDGE="svcci$$"
  export SVC_CI_DOCKER_BRIDGE
  local subnet="" n
  for n in $(seq 200 250); do
    if ! ip route | grep -q "^10\.$n\."; then subnet="10.$n.0"; break; fi
  done
  [ -n "$subnet" ] || { docker_engine_log "no free 10.x subnet for the engine's bridge"; return 1; }
  ip link add "$SVC_CI_DOCKER_BRIDGE" type bridge && ip addr add "$subnet.1/24" dev "$SVC_CI_DOCKER_BRIDGE" &&
    ip link set "$SVC_CI_DOCKER_BRIDGE" up || { docker_engine_log "could not make the bridge $SVC_CI_DOCKER_BRIDGE"; return 1; }

  # The networks the tests make on this engine (each test's platform network, build networks,
  # the compose test's) come from the rest of that 10.x.0.0/16 in /24s: 255 of them. Docker's
  # default pools (172.17-31.0.0/16 and 192.168.x.0/20) hold about 31 networks, shared with
  # every other engine and bridge of the machine; once they are used up, a controller cannot
  # make its platform network and does not start.
  # User-namespace remapping (root in a container is an unprivileged uid of the host): the
  # controller refuses Dockerfile builds on an engine without it. The remapped root must be
  # able to walk down to the data root, hence o+x on its folder. Logs are bounded by default.
  chmod 0711 "$dir"
  docker_engine_log "starting dockerd in $dir"
  dockerd \
    --userns-remap=default \
    --log-opt max-size=10m --log-opt max-file=3 \
    --data-root "$dir/data" \
    --exec-root "$dir/exec" \
    --pidfile "$dir/dockerd.pid" \
    -H "unix://$dir/docker.sock" \
    --bridge="$SVC_CI_DOCKER_BRIDGE" \
    --default-address-pool "base=10.$n.0.0/16,size=24" \
    --iptables=true \
    >"$dir/dockerd.log" 2>&1 &
  export TEST_DOCKER_HOST="unix://$dir/docker.sock"
  local ok=
  for _ in $(seq 1 60); do
    if DOCKER_HOST="$TEST_DOCKER_HOST" docker version >/dev/null 2>&1; then ok=1; break; fi
    sleep 1
  done
  if [ -z "$ok" ]; then
    docker_engine_log "dockerd did not answer within 60 s; its log:"
    tail -n 30 "$dir/dockerd.log"
    return 1
  fi

  DOCKER_HOST="$TEST_DOCKER_HOST" docker_engine_images || return 1

  local port
  port="$(docker_engine_free_port)"
  docker_registry_start "$dir" "127.0.0.1:$port" || return 1
  export TEST_REGISTRY="127.0.0.1:$port"
  docker_engine_log "TEST_DOCKER_HOST=$TEST_DOCKER_HOST TEST_REGISTRY=$TEST_REGISTRY"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    images) docker_engine_images ;;
    *) echo "usage: $0 images   (or source it and call docker_engine_start / docker_engine_stop)"; exit 2 ;;
  esac
fi
