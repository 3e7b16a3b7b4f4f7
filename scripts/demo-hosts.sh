#!/usr/bin/env bash
# Start (up) or remove (down) the two local demo hosts of inventory/demo: podman containers
# running systemd from the test-host image, on a network of their own, with a fake nvidia-smi.
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=(sglpb-demo-1 sglpb-demo-2)
net=sglpb-demo

case "${1:-up}" in
  up)
    image=$(bash scripts/build-test-image.sh)
    podman network exists "$net" || podman network create "$net" >/dev/null
    for h in "${hosts[@]}"; do
      if [[ "$(podman inspect -f '{{.State.Running}}' "$h" 2>/dev/null)" == true ]]; then
        echo "demo-hosts: $h is running"
        continue
      fi
      podman rm -f "$h" >/dev/null 2>&1 || true
      # (--cap-add SYS_PTRACE: root reads other processes' /proc/PID/fd, as on a VM, so the
      # playbooks can tell that the server's port is its unit's before they send it the key;
      # without it, on a cgroup v1 machine like this one, that check fails closed)
      podman run -d --name "$h" --hostname "$h" --network "$net" --systemd always --cap-add SYS_PTRACE \
        "$image" /sbin/init >/dev/null
      echo "demo-hosts: started $h ($image)"
    done
    ansible-playbook -i inventory/demo molecule/common/prepare-fake-gpu.yml
    ;;
  down)
    for h in "${hosts[@]}"; do podman rm -f -t 5 "$h" >/dev/null 2>&1 || true; done
    podman network exists "$net" && podman network rm "$net" >/dev/null || true
    echo "demo-hosts: removed ${hosts[*]}"
    ;;
  *)
    echo "usage: $0 up|down" >&2
    exit 2
    ;;
esac
