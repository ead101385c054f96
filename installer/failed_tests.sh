#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Prints, for each test the last ctest run failed, the lines of its output that say
# why (Qt Test's FAIL! and Loc: lines, fatal messages, signals), a few per test, so
# that the end of a CI log names the cause and not only the test.
# With --unloaded it prints instead the names of the failed tests that never ran: the
# dynamic loader refused to start them ("error while loading shared libraries"), one per
# line.
# Usage: installer/failed_tests.sh [--unloaded] BUILD_DIR
set -uo pipefail
unloaded=0
if [ "${1:-}" = "--unloaded" ]; then unloaded=1; shift; fi
build=${1:?usage: installer/failed_tests.sh [--unloaded] BUILD_DIR}
failed="$build/Testing/Temporary/LastTestsFailed.log"
log="$build/Testing/Temporary/LastTest.log"
[ -s "$failed" ] && [ -f "$log" ] || exit 0
if [ "$unloaded" = 1 ]; then
    while IFS=: read -r _ name; do
        [ -n "$name" ] || continue
        awk -v name="$name" '
            $0 ~ "^[0-9]+/[0-9]+ Test: " name "$" { inside = 1; next }
            inside && $0 ~ "^\"" name "\" end time" { exit }
            inside && /error while loading shared libraries/ { found = 1 }
            END { exit found ? 0 : 1 }
        ' "$log" && echo "$name"
    done <"$failed"
    exit 0
fi
echo "== why the failed tests failed"
while IFS=: read -r _ name; do
    [ -n "$name" ] || continue
    echo "-- $name"
    awk -v name="$name" '
        $0 ~ "^[0-9]+/[0-9]+ Test: " name "$" { inside = 1; next }
        inside && $0 ~ "^\"" name "\" end time" { exit }
        inside { last[n++ % 6] = $0 }
        inside && /FAIL!|Loc: \[|QFATAL|Received signal|terminate called|what\(\)|Timeout|timed out|Totals:/ {
            if (++shown <= 12) print "   " substr($0, 1, 300)
        }
        END {
            if (shown) exit
            print "   (no FAIL! line: it crashed, hung or exited early; its last lines:)"
            for (i = (n > 6 ? n - 6 : 0); i < n; ++i) print "   " substr(last[i % 6], 1, 300)
        }
    ' "$log"
done <"$failed"
