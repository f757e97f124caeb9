#!/usr/bin/env bash
# Puts the `svc` command of this checkout on your PATH, without any package registry:
# compiles the client (packages/cli) and links its command into a directory of programs.
#
#   scripts/install-cli.sh [BIN_DIR]      # default BIN_DIR: ~/.local/bin
#
# The link points into this checkout: `git pull` then this script again updates `svc`;
# `rm BIN_DIR/svc` removes it. Needs `npm ci` to have run (the client's one dependency,
# commander, and the TypeScript compiler come from node_modules). Never use `npx svc` outside
# the checkout: npx would fetch and run an unrelated package named `svc` from the registry.
set -euo pipefail

say() { echo "install-cli: $*" >&2; }

checkout="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin_dir="${1:-$HOME/.local/bin}"
shim="$checkout/packages/cli/bin/svc.js"
tsc="$checkout/node_modules/.bin/tsc"

if [ ! -x "$tsc" ] || [ ! -d "$checkout/node_modules/commander" ]; then
  say "dependencies are missing: run \`npm ci\` in $checkout first"
  exit 1
fi
# The client depends on no other package of the repository: compiling it alone is enough.
"$tsc" -b "$checkout/packages/cli/tsconfig.json"
chmod +x "$shim"

mkdir -p "$bin_dir"
target="$bin_dir/svc"
if [ -e "$target" ] && [ "$(readlink -f "$target")" != "$(readlink -f "$shim")" ]; then
  say "$target exists and is not this checkout's svc: remove it first"
  exit 1
fi
ln -sfn "$shim" "$target"
say "linked $target -> $shim"

bin_dir_real="$(cd "$bin_dir" && pwd -P)"
first="$(command -v svc || true)"
case ":$PATH:" in
  *":$bin_dir:"* | *":$bin_dir_real:"*)
    if [ -n "$first" ] && [ "$(readlink -f "$first")" != "$(readlink -f "$shim")" ]; then
      say "warning: another svc comes first on your PATH: $first"
    fi
    ;;
  *) say "$bin_dir is not on your PATH: add it, e.g. export PATH=\"$bin_dir:\$PATH\"" ;;
esac
"$target" --version >/dev/null
