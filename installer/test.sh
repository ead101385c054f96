#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs what is missing, builds everything, runs the whole test suite, and builds and
# checks the .deb packages.
# Usage: installer/test.sh [--no-setup] [ctest arguments...]
# ROOKERY_FUZZ_SECONDS bounds the fuzzing step (default 60; 0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."

setup=1
if [ "${1:-}" = "--no-setup" ]; then setup=0; shift; fi
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
    sed -n '3,5p' "$0" | sed 's/^# //'
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
test_status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@" || test_status=$?
# A test the dynamic loader refused to start never ran its code: CI has seen one die in
# 0.01 s with "cannot apply additional memory protection after relocation: Cannot
# allocate memory". That was Debian 12's mold linking a broken RELRO segment, every time
# for that binary (cmake/RookeryToolchain.cmake now prefers lld); should a loader refuse
# a test again, and every failure is of that kind, those tests run once more, on their
# own, and their second run decides. Any other failure counts as it is.
if [ "$test_status" != 0 ]; then
    mapfile -t unloaded < <(installer/failed_tests.sh --unloaded "$build")
    failed_count=$(grep -c . "$build/Testing/Temporary/LastTestsFailed.log" || true)
    if [ "${#unloaded[@]}" -gt 0 ] && [ "${#unloaded[@]}" = "$failed_count" ]; then
        echo "== rerun: ${unloaded[*]} could not be loaded (the loader failed before main); once more, alone"
        names=$(IFS='|'; echo "${unloaded[*]}")
        test_status=0
        ctest --test-dir "$build" --output-on-failure -R "^($names)\$" || test_status=$?
    fi
fi
status=$test_status

# The Debian packages, built as a user would (cpack) and checked: contents, desktop entry,
# AppStream metainfo, systemd units, and every program answering --version from the
# unpacked tree (installer/check_packages.sh).
echo "== package"
package_status=0
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB >cpack.log 2>&1) || package_status=$?
if [ "$package_status" = 0 ]; then
    installer/check_packages.sh "$build" || package_status=$?
else
    tail -n 20 "$build/cpack.log"
fi
if [ "$package_status" != 0 ]; then
    echo "== package FAILED; see $build/cpack.log"
    status=1
fi

# The wire decoder under libFuzzer with AddressSanitizer and UBSan: a clang build of its
# own (only the decoder and the fuzz target get compiled), seeded from tests/fuzz/corpus.
fuzz_seconds=${ROOKERY_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then
    echo "== fuzz (fuzz_wire_decoder, $fuzz_seconds s)"
    fuzz_build="$build-fuzz"
    fuzz_status=0
    CXX=clang++-14 cmake -S . -B "$fuzz_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROOKERY_FUZZ=ON \
        -DROOKERY_SANITIZE=ON -DROOKERY_BUILD_UI=OFF -DROOKERY_BUILD_TESTS=OFF -DROOKERY_BUILD_BENCH=OFF \
        -DCMAKE_CXX_FLAGS=-Wno-unknown-warning-option >/dev/null || fuzz_status=$?
    if [ "$fuzz_status" = 0 ]; then
        cmake --build "$fuzz_build" -j "$jobs" --target fuzz_wire_decoder >"$fuzz_build/build.log" 2>&1 ||
            { fuzz_status=$?; tail -n 30 "$fuzz_build/build.log"; }
    fi
    if [ "$fuzz_status" = 0 ]; then
        mkdir -p "$fuzz_build/corpus" "$fuzz_build/crashes"
        # New inputs go to the first directory; the committed seeds stay as they are.
        "$fuzz_build/tests/fuzz/fuzz_wire_decoder" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$fuzz_build/crashes/" \
            "$fuzz_build/corpus" tests/fuzz/corpus/wire_decoder 2>"$fuzz_build/fuzz.log" || fuzz_status=$?
        tail -n 12 "$fuzz_build/fuzz.log"
    fi
    if [ "$fuzz_status" != 0 ]; then
        echo "== fuzz FAILED (exit $fuzz_status); see $fuzz_build/fuzz.log and $fuzz_build/crashes/"
        status=1
    fi
fi

# Last, where a CI log's tail shows it: why each failed test failed.
[ "$test_status" = 0 ] || installer/failed_tests.sh "$build"

end=$(date +%s)
echo "== build $((built - start)) s, tests $((end - built)) s, total $((end - start)) s"
exit $status
