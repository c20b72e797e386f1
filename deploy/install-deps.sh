#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Install the Debian 12 packages ringcast needs to build, test and run.
# Idempotent: only packages that are missing are installed; when nothing is
# missing it does not touch apt at all (so it is fast and works offline).
set -eu

# Build and runtime dependencies (pkg-config names in the Makefile); jq reads
# the JSON of ringcast-bench in the integration tests; libcurl and jansson
# talk to etcd (discovery), etcd-server/etcd-client run it in the tests;
# curl and prometheus's promtool scrape and check the daemon's metrics in
# test_metrics.sh.
PACKAGES="build-essential pkg-config clang
libfabric-dev libfabric1 libibverbs-dev rdma-core
libdpdk-dev liburcu-dev libcunit1-dev libinih-dev libnuma-dev
libcurl4-openssl-dev libjansson-dev etcd-server etcd-client
libmicrohttpd-dev libsystemd-dev
libclang-rt-14-dev iproute2 procps jq curl prometheus"
# Optional tools used by `make bench --plot`; installed only when asked.
if [ "${RINGCAST_WITH_PLOT:-0}" = 1 ]; then
    PACKAGES="$PACKAGES gnuplot-nox"
fi
# make deb (Debian packages): RINGCAST_WITH_DEB=1.
if [ "${RINGCAST_WITH_DEB:-0}" = 1 ]; then
    PACKAGES="$PACKAGES debhelper devscripts lintian"
fi

missing=""
for pkg in $PACKAGES; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case "$status" in
        "install ok installed") ;;
        *) missing="$missing $pkg" ;;
    esac
done

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

echo "install-deps: installing:$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "install-deps: not root and no sudo; install as root:$missing" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
