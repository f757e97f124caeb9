#!/usr/bin/env bash
# A real two-node Docker Swarm on this one machine, for the Swarm tests: a manager and a worker,
# each a dockerd of its own, and Debian's docker-registry that both pull from.
#
# Source it from .ci/run:   source .ci/swarm.sh && swarm_start
# or run it by hand:        eval "$(.ci/swarm.sh start)"    (prints the exports below)
#                           .ci/swarm.sh stop [<dir>]       (default: $SVC_CI_SWARM_DIR)
#
# Two daemons in one network namespace would collide on the swarm's ports (2377, 7946, 4789)
# and on its bridge docker_gwbridge, so each node gets a network namespace of its own
# (svcsw<pid>-m, svcsw<pid>-w), with a loopback, a veth to a bridge on the host (svcsw<pid>,
# a free 10.160-199.x/24: the host is .1, the manager .2, the worker .3) and a default route
# through the host. Everything Docker makes for a node (its docker0, docker_gwbridge, ingress,
# its iptables rules) stays inside that node's namespace: the host's tables, and the single
# engine of .ci/docker-engine.sh, are not touched, apart from one rule that lets the two
# nodes talk across the host bridge (FORWARD -i svcsw<pid> -o svcsw<pid> ACCEPT, needed once
# another engine has set the FORWARD policy to DROP). Each daemon also has its own hostname
# (a UTS namespace), so the nodes are told apart by name, and its own data root, exec root,
# pid file and unix socket under a temporary directory; it runs in a mount namespace of
# its own (as `ip netns exec` does), so its mounts go with it.
#
# The registry listens on the host end of the bridge (10.x.y.1:<port>), the one address both
# nodes and the host reach (127.0.0.1 is each namespace's own loopback); both daemons trust it
# over http (--insecure-registry). The test images of .ci/docker-engine.sh are made on the
# manager and pushed there; the worker has no image but what it pulls. Exports:
#   TEST_SWARM_HOST          unix://<dir>/manager.sock   the manager's engine
#   TEST_SWARM_WORKER_HOST   unix://<dir>/worker.sock    the worker's engine
#   TEST_SWARM_REGISTRY      10.x.y.1:<port>             the registry every node pulls from,
#                            holding <registry>/svc-test/busybox:1 and <registry>/svc-test/node:20
#   TEST_SWARM_AUTH_REGISTRY 10.x.y.1:<port>             an empty registry that takes no request
#   TEST_SWARM_REGISTRY_USERNAME, TEST_SWARM_REGISTRY_PASSWORD    without this login (htpasswd)
#   TEST_SWARM_MANAGER_ADDR  10.x.y.2   the nodes' addresses: ports published in host mode are
#   TEST_SWARM_WORKER_ADDR   10.x.y.3   reachable there from the host (controller and router)
#   TEST_SWARM_WORKER_LINK   svcsw<pid>w the host end of the worker's veth: `ip link set … down`
#                                       cuts the worker off (a lost node), `up` brings it back
#   TEST_SWARM_NETWORK       svc-apps   the tasks' network (SWARM_NETWORK): a swarm-scoped bridge
#                                       network made from a config-only network on each node,
#                                       10.80.0.0/24 on bridge svc-apps0, ICC off
#   TEST_SWARM_FIREWALL      1          each node has the host firewall of docs/operations.md:
#                                       tasks cannot open connections to the nodes
#   SVC_CI_SWARM_DIR         the directory, for swarm_stop
# The swarm's overlay networks come from 10.64.0.0/12, apart from the host bridge's subnet.
# swarm_stop kills the registry and both daemons by pid (and whatever is left in the nodes'
# namespaces), deletes the namespaces, the bridge and the host rule, and removes the
# directory; swarm_start installs it as an EXIT trap chained after any trap already set.

swarm_log() { echo "::: swarm: $*" >&2; }

swarm_stop() {
  local dir="${1:-${SVC_CI_SWARM_DIR:-}}"
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  local name=""
  [ -f "$dir/name" ] && name="$(cat "$dir/name")"
  local registry_pid
  for registry_pid in "$dir/registry.pid" "$dir/auth/registry.pid"; do
    if [ -f "$registry_pid" ]; then kill "$(cat "$registry_pid")" 2>/dev/null || true; fi
  done
  # Both daemons at once: each stops its containers (no live restore) and its containerd.
  local node pid pids=()
  for node in worker manager; do
    if [ -f "$dir/$node.pid" ]; then
      pid="$(cat "$dir/$node.pid")"
      kill "$pid" 2>/dev/null && pids+=("$pid")
    fi
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ -n "$name" ]; then
    local ns
    for ns in "$name-m" "$name-w"; do
      if ip netns list 2>/dev/null | grep -q "^$ns\b"; then
        # What is left in the node (a shim, a docker-proxy) goes by pid, then the namespace.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns delete "$ns" 2>/dev/null || true
      fi
    done
    local rule
    iptables -S FORWARD 2>/dev/null | grep -- "-i $name -o $name " | sed 's/^-A/-D/' | while read -r rule; do
      eval "iptables $rule" 2>/dev/null || true
    done
    ip link delete "$name" 2>/dev/null || true
  fi
  rm -rf "$dir" 2>/dev/null || true
  if [ "$dir" = "${SVC_CI_SWARM_DIR:-}" ]; then SVC_CI_SWARM_DIR=; fi
}

# Runs dockerd for one node inside its namespace, with its own hostname and mount namespace.
# As `ip netns exec` does, /sys is mounted again so that it shows the node's interfaces; the
# host's cgroup mounts are carried over onto it, dockerd needs them.
swarm_dockerd() {
  local dir="$1" node="$2" ns="$3" registry="$4" auth_registry="$5"
  mkdir -p "$dir/$node/cgroup"
  nsenter --net="/run/netns/$ns" unshare --mount --uts --propagation slave sh -c '
    hostname "$1" && mount --rbind /sys/fs/cgroup "$2" && mount -t sysfs sysfs /sys &&
      mount --rbind "$2" /sys/fs/cgroup && umount -l "$2" || exit 1
    shift 2
    exec "$@"' sh "$(basename "$dir")-$node" "$dir/$node/cgroup" \
    dockerd \
    --data-root "$dir/$node/data" \
    --exec-root "$dir/$node/exec" \
    --pidfile "$dir/$node.pid" \
    -H "unix://$dir/$node.sock" \
    --insecure-registry "$registry" \
    --insecure-registry "$auth_registry" \
    --iptables=true \
    --shutdown-timeout 3 \
    >"$dir/$node.log" 2>&1 &
}

swarm_wait_engine() {
  local dir="$1" node="$2"
  for _ in $(seq 1 60); do
    DOCKER_HOST="unix://$dir/$node.sock" docker version >/dev/null 2>&1 && return 0
    sleep 1
  done
  swarm_log "the $node's dockerd did not answer within 60 s; its log:"
  tail -n 30 "$dir/$node.log" >&2
  return 1
}

swarm_start() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
  command -v busybox >/dev/null 2>&1 || missing+=(busybox-static)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)
  command -v htpasswd >/dev/null 2>&1 || missing+=(apache2-utils)
  if [ "${#missing[@]}" -gt 0 ]; then
    swarm_log "installing ${missing[*]}"
    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}") >/dev/null ||
      { swarm_log "could not install ${missing[*]}"; return 1; }
  fi
  # The test images are made as .ci/docker-engine.sh makes them.
  if ! declare -F docker_engine_images >/dev/null; then
    # shellcheck source=docker-engine.sh
    source "$(dirname "${BASH_SOURCE[0]}")/docker-engine.sh"
  fi

  SVC_CI_SWARM_DIR="$(mktemp -d /tmp/svc-ci-swarm.XXXXXX)"
  export SVC_CI_SWARM_DIR
  local dir="$SVC_CI_SWARM_DIR"
  if [ -z "${SVC_CI_SWARM_NO_TRAP:-}" ]; then
    local previous_trap
    previous_trap="$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")"
    # shellcheck disable=SC2064
    trap "swarm_stop $dir; ${previous_trap:-true}" EXIT
  fi
  local started=$SECONDS

  # The host bridge, on a subnet no route of the machine uses yet, and one namespace per node.
  local name="svcsw$$"
  echo "$name" >"$dir/name"
  local subnet="" n
  # SVC_CI_SWARM_FIRST_SUBNET: where the search starts (two swarms started at once search apart).
  for n in $(seq "${SVC_CI_SWARM_FIRST_SUBNET:-160}" 199); do
    if ! ip route | grep -q "^10\.$n\."; then subnet="10.$n.0"; break; fi
  done
  [ -n "$subnet" ] || { swarm_log "no free 10.x subnet for the host bridge"; return 1; }
  local host_addr="$subnet.1" manager_addr="$subnet.2" worker_addr="$subnet.3"
  ip link add "$name" type bridge && ip addr add "$host_addr/24" dev "$name" && ip link set "$name" up ||
    { swarm_log "could not make the bridge $name"; return 1; }
  iptables -I FORWARD -i "$name" -o "$name" -j ACCEPT ||
    { swarm_log "could not let the nodes talk across $name (iptables)"; return 1; }
  local node suffix addr ns
  for node in manager worker; do
    suffix="${node:0:1}"
    ns="$name-$suffix"
    if [ "$node" = manager ]; then addr="$manager_addr"; else addr="$worker_addr"; fi
    ip netns add "$ns" &&
      ip link add "$name$suffix" type veth peer name "${name}p$suffix" &&
      ip link set "${name}p$suffix" netns "$ns" &&
      ip link set "$name$suffix" master "$name" &&
      ip link set "$name$suffix" up &&
      ip netns exec "$ns" ip link set lo up &&
      ip netns exec "$ns" ip link set "${name}p$suffix" name eth0 &&
      ip netns exec "$ns" ip addr add "$addr/24" dev eth0 &&
      ip netns exec "$ns" ip link set eth0 up &&
      ip netns exec "$ns" ip route add default via "$host_addr" ||
      { swarm_log "could not make the network namespace of the $node"; return 1; }
  done

  # The registry on the host end of the bridge, on a port free there.
  local port
  port="$(docker_engine_free_port "$host_addr")" ||
    { swarm_log "no free port on $host_addr"; return 1; }
  local registry="$host_addr:$port"
  docker_registry_start "$dir" "$registry" >&2 || return 1
  # A second registry that asks for a login, as a production registry does (REGISTRY_USERNAME, REGISTRY_PASSWORD).
  local auth_port username=svc-ci password
  auth_port="$(docker_engine_free_port "$host_addr")" ||
    { swarm_log "no free port on $host_addr"; return 1; }
  local auth_registry="$host_addr:$auth_port"
  password="$(node -e 'console.log(require("crypto").randomBytes(18).toString("base64url"))')"
  mkdir -p "$dir/auth"
  htpasswd -nbB "$username" "$password" >"$dir/auth/htpasswd" ||
    { swarm_log "could not write the registry's htpasswd file"; return 1; }
  docker_registry_start "$dir/auth" "$auth_registry" "$dir/auth/htpasswd" >&2 || return 1

  swarm_log "starting the manager and the worker in $dir"
  swarm_dockerd "$dir" manager "$name-m" "$registry" "$auth_registry"
  swarm_dockerd "$dir" worker "$name-w" "$registry" "$auth_registry"
  swarm_wait_engine "$dir" manager || return 1
  swarm_wait_engine "$dir" worker || return 1
  swarm_log "engines up after $((SECONDS - started)) s"

  local manager="unix://$dir/manager.sock" worker="unix://$dir/worker.sock"
  DOCKER_HOST="$manager" docker swarm init --advertise-addr "$manager_addr" --listen-addr "$manager_addr:2377" \
    --default-addr-pool 10.64.0.0/12 >/dev/null || { swarm_log "docker swarm init failed"; return 1; }
  local token
  token="$(DOCKER_HOST="$manager" docker swarm join-token -q worker)" || return 1
  DOCKER_HOST="$worker" docker swarm join --token "$token" --advertise-addr "$worker_addr" --listen-addr "$worker_addr:2377" \
    "$manager_addr:2377" >/dev/null || { swarm_log "the worker could not join the swarm; its log:"; tail -n 30 "$dir/worker.log" >&2; return 1; }
  ok=
  for _ in $(seq 1 60); do
    if [ "$(DOCKER_HOST="$manager" docker node ls --format '{{.Status}}' 2>/dev/null | grep -c '^Ready$')" = 2 ]; then ok=1; break; fi
    sleep 0.5
  done
  [ -n "$ok" ] || { swarm_log "the two nodes were not Ready within 30 s"; DOCKER_HOST="$manager" docker node ls >&2; return 1; }
  swarm_log "swarm of two Ready nodes after $((SECONDS - started)) s"

  # The tasks' network, as docs/operations.md has operators make it: a config-only network on
  # each node (ICC off), then the swarm-scoped bridge network on the manager made from it.
  local network=svc-apps
  for node in manager worker; do
    DOCKER_HOST="unix://$dir/$node.sock" docker network create --config-only --subnet 10.80.0.0/24 \
      -o com.docker.network.bridge.enable_icc=false -o com.docker.network.bridge.name=svc-apps0 "$network-config" >/dev/null ||
      { swarm_log "could not make the config-only network $network-config on the $node"; return 1; }
  done
  DOCKER_HOST="$manager" docker network create -d bridge --scope swarm --config-from "$network-config" "$network" >/dev/null ||
    { swarm_log "could not make the swarm network $network"; return 1; }

  # The host firewall of docs/operations.md (step 7) on each node, as an operator sets it: new
  # connections from the tasks' bridge to the node itself and to the other nodes are dropped,
  # so a task cannot reach other tasks' published ports; replies (the router's connections) pass.
  for node in manager worker; do
    ns="$name-${node:0:1}"
    ip netns exec "$ns" iptables -I INPUT -i svc-apps0 -m conntrack --ctstate NEW -j DROP &&
      ip netns exec "$ns" iptables -I DOCKER-USER -i svc-apps0 -d "$subnet.0/24" -m conntrack --ctstate NEW -j DROP ||
      { swarm_log "could not install the firewall of the $node"; return 1; }
  done

  DOCKER_HOST="$manager" docker_engine_images >&2 || return 1
  local image
  for image in svc-test/busybox:1 svc-test/node:20; do
    DOCKER_HOST="$manager" docker image inspect "$image" >/dev/null 2>&1 || continue
    DOCKER_HOST="$manager" docker tag "$image" "$registry/$image" &&
      DOCKER_HOST="$manager" docker push -q "$registry/$image" >/dev/null ||
      { swarm_log "could not push $registry/$image"; return 1; }
  done
  swarm_log "images pushed to $registry after $((SECONDS - started)) s"

  export TEST_SWARM_HOST="$manager"
  export TEST_SWARM_WORKER_HOST="$worker"
  export TEST_SWARM_REGISTRY="$registry"
  export TEST_SWARM_AUTH_REGISTRY="$auth_registry"
  export TEST_SWARM_REGISTRY_USERNAME="$username"
  export TEST_SWARM_REGISTRY_PASSWORD="$password"
  export TEST_SWARM_MANAGER_ADDR="$manager_addr"
  export TEST_SWARM_WORKER_ADDR="$worker_addr"
  export TEST_SWARM_WORKER_LINK="${name}w"
  export TEST_SWARM_NETWORK="$network"
  export TEST_SWARM_FIREWALL=1
  swarm_log "TEST_SWARM_HOST=$TEST_SWARM_HOST TEST_SWARM_WORKER_HOST=$TEST_SWARM_WORKER_HOST TEST_SWARM_REGISTRY=$TEST_SWARM_REGISTRY"
  swarm_log "TEST_SWARM_MANAGER_ADDR=$TEST_SWARM_MANAGER_ADDR TEST_SWARM_WORKER_ADDR=$TEST_SWARM_WORKER_ADDR TEST_SWARM_NETWORK=$TEST_SWARM_NETWORK"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  case "${1:-}" in
    start)
      # By hand the swarm outlives this script: no trap, the exports on stdout, and a failed
      # start cleans up after itself.
      SVC_CI_SWARM_NO_TRAP=1
      if swarm_start; then
        for v in SVC_CI_SWARM_DIR TEST_SWARM_HOST TEST_SWARM_WORKER_HOST TEST_SWARM_REGISTRY TEST_SWARM_AUTH_REGISTRY TEST_SWARM_REGISTRY_USERNAME TEST_SWARM_REGISTRY_PASSWORD TEST_SWARM_MANAGER_ADDR TEST_SWARM_WORKER_ADDR TEST_SWARM_WORKER_LINK TEST_SWARM_NETWORK TEST_SWARM_FIREWALL; do
          echo "export $v=${!v}"
        done
      else
        swarm_stop
        exit 1
      fi
      ;;
    stop) swarm_stop "${2:-${SVC_CI_SWARM_DIR:-}}" ;;
    *) echo "usage: $0 start|stop [<dir>]   (or source it and call swarm_start / swarm_stop)" >&2; exit 2 ;;
  esac
fi
