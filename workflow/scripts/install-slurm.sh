#!/usr/bin/env bash
# Install the Debian packages for a single-node SLURM test cluster with real accounting:
#   slurm-wlm (slurmctld, slurmd, client tools), munge, mariadb-server, slurmdbd.
# Idempotent: does nothing when every package is already installed; runs `apt-get update`
# at most once, and only when a package is missing. Needs root (or sudo) and apt.
# Used by CI (.ci/run) before `python -m pytest tests/cluster`; see docs/cluster.md.
set -euo pipefail

PACKAGES=(slurm-wlm munge mariadb-server slurmdbd)

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
        missing+=("$p")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install-slurm: already installed: ${PACKAGES[*]}"
    exit 0
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-slurm: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
apt_install() {
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
}
echo "install-slurm: installing ${missing[*]}"
# Try from the current package lists first; update them once if that fails (fresh images
# ship with empty lists).
if ! apt_install; then
    "${SUDO[@]}" apt-get update -q
    apt_install
fi
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' \
        || { echo "install-slurm: $p is still not installed" >&2; exit 1; }
done
echo "install-slurm: done"
