#!/usr/bin/env bash
# Build a cached store once and link it into the clone:
#   scripts/cache-store.sh NAME STORE LINK COMMAND...
# STORE lives outside the clone (under SGLPB_CACHE, named by a hash of what it is built from), so
# fresh clones reuse it. Under a lock on STORE.lock, so that two `make` runs at once (a demo
# beside `make test`) neither build it twice nor remove each other's half-built store: when
# STORE/.done is missing, STORE is removed and COMMAND runs with STORE in its environment, then
# its time and size are printed and STORE/.done is written. Then LINK points at STORE.
set -euo pipefail
name=$1 store=$2 link=$3
shift 3
mkdir -p "$(dirname "$store")" "$(dirname "$link")"
exec 9>"$store.lock"
flock 9
if [ -f "$store/.done" ]; then
  echo "$name: reusing $store"
else
  echo "$name: building $store"
  start=$(date +%s)
  rm -rf "$store"
  STORE=$store "$@"
  echo "$name: built in $(( $(date +%s) - start )) s, $(du -sm "$store" | cut -f1) MB"
  touch "$store/.done"
fi
rm -rf "$link"
ln -s "$store" "$link"
# (make compares the target LINK/.done with its prerequisites: a reused store is as new as now)
touch "$store/.done"
