#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs, idempotently, every Debian package Rookery needs to build, test and run.
# Safe to run again: it installs only what is missing and changes nothing else.
set -euo pipefail

usage() {
    cat <<'USAGE'
Usage: installer/setup.sh [--check] [--help]

Installs the Debian 12 packages that Rookery needs (build tools, Qt 6, LibTorch,
OpenBLAS, Boost, OpenSSL, SQLite, Fashion-MNIST, Xvfb, test tools), then points the
system BLAS at OpenBLAS. Run as root. Only missing packages are installed.

  --check   list the missing packages and exit 1 if any are missing; install nothing
  --help    show this text
USAGE
}

packages=(
    # build
    build-essential cmake ninja-build ccache lld pkg-config git
    # engine
    libtorch-dev libopenblas0-pthread libboost-dev libssl-dev openssl libsqlite3-dev sqlite3
    zlib1g-dev protobuf-compiler libprotobuf-dev nlohmann-json3-dev libsystemd-dev libxss-dev
    libx11-dev libcli11-dev
    # reaching volunteers behind home routers: UPnP IGD and NAT-PMP port mapping
    libminiupnpc-dev libnatpmp-dev
    # desktop app
    qt6-base-dev qt6-base-dev-tools qt6-charts-dev qt6-svg-dev qt6-qpa-plugins libgl-dev libqt6opengl6-dev
    # data
    dataset-fashion-mnist
    # tests, fuzzing, screenshots, packaging checks
    xvfb xauth x11-apps dbus-daemon imagemagick clang-14 libclang-rt-14-dev libfuzzer-14-dev
    desktop-file-utils appstream dpkg-dev file
    # the emulated internet (network namespaces, NAT routers, a UPnP router)
    iproute2 nftables miniupnpd-nftables miniupnpd
)

check_only=0
for arg in "$@"; do
    case "$arg" in
        --check) check_only=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = "installed" ] || missing+=("$p")
done

if [ "$check_only" = 1 ]; then
    if [ ${#missing[@]} -eq 0 ]; then echo "setup.sh: all ${#packages[@]} packages are installed"; exit 0; fi
    echo "setup.sh: missing: ${missing[*]}"; exit 1
fi

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "setup.sh: these packages are missing and installing them needs root: ${missing[*]}" >&2
        echo "setup.sh: run 'sudo installer/setup.sh'" >&2
        exit 1
    fi
    echo "setup.sh: installing ${#missing[@]} packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "setup.sh: all ${#packages[@]} packages already installed"
fi

# LibTorch calls whichever BLAS the system alternative names; the reference BLAS made
# our MLP 6x slower than OpenBLAS, so point it at OpenBLAS explicitly.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
for lib in libblas.so.3 liblapack.so.3; do
    target=/usr/lib/$arch/openblas-pthread/$lib
    if [ -e "$target" ] && [ "$(id -u)" = 0 ]; then
        current=$(readlink -f "/etc/alternatives/$lib-$arch" 2>/dev/null || true)
        if [ "$current" != "$target" ]; then
            update-alternatives --set "$lib-$arch" "$target" >/dev/null
            echo "setup.sh: $lib now points at OpenBLAS"
        fi
    fi
done
