#!/usr/bin/env bash
# Installs the Debian packages simpler needs to build and test, if missing.
# As root it uses apt-get; otherwise it names what is missing and fails.
set -euo pipefail

needed=(cmake make gcc libc6-dev libcmocka-dev pkg-config libasan8 libubsan1 libtsan2)
missing=()
for pkg in "${needed[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "simpler: missing Debian packages: ${missing[*]}" >&2
    echo "simpler: install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
fi

echo "simpler: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
