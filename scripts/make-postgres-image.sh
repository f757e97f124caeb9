#!/usr/bin/env bash
# Makes a PostgreSQL 15 image from Debian's own packages, without any image registry: a
# minimal Debian bookworm root with postgresql-15 made by debootstrap on this machine (from
# the Debian mirror apt uses), plus a small entry point, imported with `docker import`.
# compose.yaml runs it in place of the official postgres:15 where no registry is reachable:
#
#   scripts/make-postgres-image.sh [TAG]        # default TAG: svc-base/postgres:15-debian
#   POSTGRES_IMAGE=svc-base/postgres:15-debian docker compose up -d
#
# The image keeps the official image's interface as compose.yaml uses it: POSTGRES_USER (a
# superuser, default postgres), POSTGRES_PASSWORD (required), POSTGRES_DB (default: the
# user's name), the data in /var/lib/postgresql/data (a volume), port 5432, pg_isready on
# PATH. The first start of an empty data directory runs initdb (UTF-8, C.UTF-8 locale,
# password logins over TCP, scram-sha-256); later starts use the data as they find it.
#
# Needs root and debootstrap (apt-get install debootstrap); uses the engine of $DOCKER_HOST.
# DEBIAN_MIRROR overrides the mirror (default: the first deb.debian.org-style URI apt uses);
# DEBOOTSTRAP_CACHE names a directory that keeps the downloaded packages for the next run.
set -euo pipefail

tag="${1:-svc-base/postgres:15-debian}"
say() { echo "make-postgres-image: $*" >&2; }

command -v debootstrap >/dev/null || { say "debootstrap is missing (apt-get install debootstrap)"; exit 1; }
[ "$(id -u)" = 0 ] || { say "debootstrap needs root"; exit 1; }

mirror="${DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror="$(grep -hsoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* |
    grep -oE 'https?://[^ ]+' | head -n 1 || true)"
  mirror="${mirror:-http://deb.debian.org/debian}"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
cache_args=()
if [ -n "${DEBOOTSTRAP_CACHE:-}" ]; then
  mkdir -p "$DEBOOTSTRAP_CACHE"
  cache_args=(--cache-dir="$(cd "$DEBOOTSTRAP_CACHE" && pwd)")
fi

say "debootstrap bookworm with postgresql-15 from $mirror (a few minutes)"
debootstrap --variant=minbase --include=postgresql-15 "${cache_args[@]}" bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  say "debootstrap failed"
  exit 1
}

# What the image needs at run time, and no more: no apt lists, package caches or docs.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* "$root"/usr/share/man/*
mkdir -p "$root/var/lib/postgresql/data" "$root/run/postgresql"
chroot "$root" chown -R postgres:postgres /var/lib/postgresql /run/postgresql
chmod 0700 "$root/var/lib/postgresql/data"
chmod 2775 "$root/run/postgresql"

cat >"$root/usr/local/bin/svc-postgres-entrypoint" <<'SH'
#!/bin/sh
# Initialises an empty data directory as the official postgres image does, then runs the server.
set -eu
PGDATA="${PGDATA:-/var/lib/postgresql/data}"
export PGDATA
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "svc-postgres: set POSTGRES_PASSWORD (the password of POSTGRES_USER)" >&2
    exit 1
  fi
  user="${POSTGRES_USER:-postgres}"
  db="${POSTGRES_DB:-$user}"
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$user\";" | postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
  echo "svc-postgres: initialised $PGDATA (user $user, database $db)" >&2
fi
exec postgres -D "$PGDATA" "$@"
SH
chmod 0755 "$root/usr/local/bin/svc-postgres-entrypoint"

say "importing $tag"
tar -C "$root" --numeric-owner -c . | docker import \
  -c 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV LANG=C.UTF-8' \
  -c 'ENV PGDATA=/var/lib/postgresql/data' \
  -c 'USER postgres' \
  -c 'VOLUME ["/var/lib/postgresql/data"]' \
  -c 'EXPOSE 5432' \
  -c 'ENTRYPOINT ["/usr/local/bin/svc-postgres-entrypoint"]' \
  - "$tag" >/dev/null
# SIGINT is PostgreSQL's fast shutdown (SIGTERM waits for every client to leave), as in the
# official image; `docker import` cannot set a stop signal, a build without context can.
printf 'FROM %s\nSTOPSIGNAL SIGINT\n' "$tag" | docker build -q -t "$tag" - >/dev/null 2>"$work/build.log" || {
  cat "$work/build.log" >&2
  exit 1
}
say "made $tag"
