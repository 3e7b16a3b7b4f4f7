#!/usr/bin/env bash
# Build the test-host image: Debian 12 with systemd as PID 1, for podman (docs/architecture.md, "Test hosts").
# The image is tagged with a hash of this recipe and rebuilt only when the recipe changes.
# Prints the image reference on stdout.
set -euo pipefail

name=localhost/sglpb-debian12
suite=bookworm
mirror=${SGLPB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
include=python3,python3-apt,sudo,systemd,systemd-sysv,dbus,iproute2,procps,ca-certificates,curl,gnupg
# (a byte-code cache for the modules Ansible runs from zips, root's only: scripts/zipimport-cache)
zipimport_cache=$(dirname "$0")/zipimport-cache
recipe_hash=$( { cat "$0" "$zipimport_cache"/*; echo "$mirror"; cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true; } \
  | sha256sum | cut -c1-12)
ref="$name:$recipe_hash"

# A saved copy in SGLPB_CACHE (podman save, below) is loaded instead of a rebuild: CI restores
# that folder between runs, where podman's own storage starts empty.
archive=${SGLPB_CACHE:+$SGLPB_CACHE/test-image-$recipe_hash.tar}
if ! podman image exists "$ref" && [ -n "$archive" ] && [ -f "$archive" ]; then
  echo "build-test-image: loading $archive" >&2
  podman load -q -i "$archive" >/dev/null || rm -f "$archive"
fi
if podman image exists "$ref"; then
  podman tag "$ref" "$name:latest"
  echo "$ref"
  exit 0
fi

rootfs=$(mktemp -d /var/tmp/sglpb-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "build-test-image: debootstrap $suite into $rootfs (about a minute)" >&2
debootstrap --variant=minbase --include="$include" "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
  echo "build-test-image: debootstrap failed; last lines of $rootfs.log:" >&2
  tail -20 "$rootfs.log" >&2
  exit 1
}
rm -f "$rootfs.log"
# HTTPS may go through a re-signing proxy: trust the host's local CAs inside the image too.
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
  chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
fi
cp "$zipimport_cache"/* "$rootfs/usr/lib/python3/dist-packages/"
install -d -m 0700 "$rootfs/var/cache/sglpb-zipimport"
# Empty, old apt lists: roles' cache_valid_time must trigger a real update.
rm -rf "$rootfs/var/lib/apt/lists/"*
mkdir -p "$rootfs/var/lib/apt/lists/partial"
touch -d 2000-01-01 "$rootfs/var/lib/apt/lists"
: >"$rootfs/etc/machine-id"
tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' - "$ref" >/dev/null
if [ -n "$archive" ]; then
  mkdir -p "$SGLPB_CACHE"
  podman save -q -o "$archive.$$" "$ref" && mv "$archive.$$" "$archive"
fi
podman tag "$ref" "$name:latest"
echo "$ref"
