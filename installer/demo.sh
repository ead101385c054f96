#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs what is missing, builds, and runs Rookery's main job on this machine: the
# local demo swarm, 4 nodes in 2 clusters of 2 pipeline stages, training the MLP on
# Fashion-MNIST. With a display ($DISPLAY or $WAYLAND_DISPLAY) it opens the desktop app,
# which is one of the 4 nodes and starts the swarm once you have consented on its first
# start; without one the same swarm runs headless in this terminal.
# Usage: installer/demo.sh [--no-setup] [--headless] [extra options for rookery or rookery-local-swarm...]
set -euo pipefail
cd "$(dirname "$0")/.."

setup=1
headless=0
while [ $# -gt 0 ]; do
    case "$1" in
        --no-setup) setup=0; shift ;;
        --headless) headless=1; shift ;;
        -h|--help) sed -n '3,8p' "$0" | sed 's/^# //'; exit 0 ;;
        *) break ;;
    esac
done
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then headless=1; fi

build=${ROOKERY_BUILD_DIR:-build}
[ "$setup" = 1 ] && installer/setup.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

if [ "$headless" = 0 ]; then
    # rookery-node and rookery-coordinator come with it: the demo swarm runs them.
    cmake --build "$build" -j "$(nproc)" --target rookery
    echo "== opening the desktop app on the local demo swarm (4 nodes; the app is one of them)"
    echo "   Agree on the consent screen first: nothing computes before. Quit checkpoints; rerun resumes."
    exec "$build/app/rookery" --demo-swarm --peers 4 "$@"
fi

cmake --build "$build" -j "$(nproc)" --target rookery-local-swarm
work=${ROOKERY_DEMO_DIR:-$PWD/$build/demo-swarm}
echo "== no display: running the local demo swarm headless (4 nodes, 2 clusters of 2; work in $work)"
echo "   Ctrl-C checkpoints every node; rerun resumes."
exec "$build/app/rookery-local-swarm" --nodes 4 --cluster-size 2 --work-dir "$work" "$@"
