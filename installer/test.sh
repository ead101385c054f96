#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs what is missing, builds everything, and runs the whole test suite.
# Usage: installer/test.sh [--no-setup] [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."

setup=1
if [ "${1:-}" = "--no-setup" ]; then setup=0; shift; fi
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
    sed -n '3,4p' "$0" | sed 's/^# //'
    exit 0
fi

build=${ROOKERY_BUILD_DIR:-build}
jobs=${ROOKERY_JOBS:-$(nproc)}
start=$(date +%s)

[ "$setup" = 1 ] && installer/setup.sh

echo "== configure ($build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "== build"
cmake --build "$build" -j "$jobs"
built=$(date +%s)

echo "== test"
export QT_QPA_PLATFORM=offscreen
status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@" || status=$?

end=$(date +%s)
echo "== build $((built - start)) s, tests $((end - built)) s, total $((end - start)) s"
exit $status
