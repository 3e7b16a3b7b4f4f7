#!/usr/bin/env bash
# Prepare a fresh Debian/Ubuntu machine (as root) to run the test hosts: podman with runc,
# debootstrap for the image, and the containers.conf settings that this cgroup layout needs
# (docs/architecture.md, "Test hosts"). Idempotent: does nothing when everything is already in place.
set -euo pipefail

need=()
for cmd in podman runc debootstrap; do
  command -v "$cmd" >/dev/null 2>&1 || need+=("$cmd")
done
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
# (sshd for the test that stops a controller over SSH with ControlPersist; it runs an sshd of its
# own on a free loopback port, so the package's service is kept from starting, below)
[[ -x /usr/sbin/sshd ]] || need+=(openssh-server)
if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup-host: missing ${need[*]}; run as root (or install them) and retry" >&2
    exit 1
  fi
  echo "setup-host: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # No service the packages bring (sshd) starts on this machine: policy-rc.d answers "not now".
  policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

conf=/etc/containers/containers.conf
want='# managed by sglang-playbooks scripts/setup-host.sh
[containers]
default_ulimits = ["nofile=16384:16384", "nproc=16384:16384"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"'
if [[ ! -f $conf ]] || [[ "$(cat "$conf")" != "$want" ]]; then
  if [[ -f $conf ]] && ! grep -q 'managed by sglang-playbooks' "$conf"; then
    cp "$conf" "$conf.orig.$(date +%s)"
  fi
  mkdir -p /etc/containers
  printf '%s\n' "$want" >"$conf"
  echo "setup-host: wrote $conf"
fi
