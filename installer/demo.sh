#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs what is missing, builds, and runs Rookery's main job on this machine.
# Usage: installer/demo.sh [--no-setup] [extra rookery-node options...]
set -euo pipefail
cd "$(dirname "$0")/.."

setup=1
if [ "${1:-}" = "--no-setup" ]; then setup=0; shift; fi
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
    sed -n '3,4p' "$0" | sed 's/^# //'
    exit 0
fi

build=${ROOKERY_BUILD_DIR:-build}
[ "$setup" = 1 ] && installer/setup.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"

data=${ROOKERY_DEMO_DIR:-$PWD/$build/demo-data}
echo "== training the MLP on Fashion-MNIST on this machine (data in $data; Ctrl-C checkpoints, rerun resumes)"
exec "$build/app/rookery-node" --data-dir "$data" --run demo --steps 3000 --eval-every 1000 "$@"
