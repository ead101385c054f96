#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Checks the .deb packages that `cpack -G DEB` wrote into a build directory: their
# control data and contents (dpkg-deb), the desktop entry (desktop-file-validate), the
# AppStream metainfo (appstreamcli), the systemd units (systemd-analyze, where it can
# run), and that every program in them answers --version with the project's version,
# run from the unpacked tree.
# Usage: installer/check_packages.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: installer/check_packages.sh BUILD_DIR}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
ui=$(sed -n 's/^ROOKERY_BUILD_UI:BOOL=//p' "$build/CMakeCache.txt")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "check_packages: FAIL: $*"; failures=$((failures + 1)); }

# package -> files it must hold (paths in the package, without the leading .)
declare -A must=(
    [rookery-node]="/usr/bin/rookery-node /usr/bin/rookery-local-swarm /usr/lib/systemd/user/rookery-node.service"
    [rookery-coordinator]="/usr/bin/rookery-coordinator /usr/lib/systemd/system/rookery-coordinator.service"
)
if [ "${ui^^}" = ON ]; then
    icons=""
    for s in 16 22 24 32 48 64 128 256 512; do icons+=" /usr/share/icons/hicolor/${s}x${s}/apps/rookery.png"; done
    must[rookery]="/usr/bin/rookery /usr/share/applications/rookery.desktop
        /usr/share/metainfo/invalid.rookery.Rookery.metainfo.xml /usr/share/icons/hicolor/scalable/apps/rookery.svg$icons"
fi

for pkg in "${!must[@]}"; do
    deb=$(ls "$build"/"${pkg}"_"${version}"-*_*.deb 2>/dev/null | head -n 1 || true)
    if [ -z "$deb" ]; then fail "$pkg: no ${pkg}_${version}-*.deb in $build"; continue; fi
    echo "== $(basename "$deb")"
    info=$(dpkg-deb --info "$deb")
    grep -E '^ (Package|Version|Depends|Recommends|Installed-Size):' <<<"$info" | cut -c1-160
    grep -q "^ Package: $pkg\$" <<<"$info" || fail "$pkg: control names another package"
    grep -q "^ Version: $version-" <<<"$info" || fail "$pkg: version is not $version"
    grep -q '^ Depends: .*lib' <<<"$info" || fail "$pkg: Depends lists no libraries (dpkg-shlibdeps did not run?)"
    contents=$(dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|')
    for f in ${must[$pkg]}; do
        grep -qx "$f" <<<"$contents" || fail "$pkg: $f is missing"
    done
    dpkg-deb -x "$deb" "$tmp/root"
done

case "$(sed -n 's/^ Depends: //p' <<<"$(dpkg-deb --info "$build"/rookery-node_"$version"-*.deb)")" in
    *rookery-coordinator*dataset-fashion-mnist* | *dataset-fashion-mnist*rookery-coordinator*) ;;
    *) fail "rookery-node: Depends must name rookery-coordinator and dataset-fashion-mnist" ;;
esac

root=$tmp/root
echo "== programs from the unpacked tree"
programs="rookery-node rookery-local-swarm rookery-coordinator"
[ "${ui^^}" = ON ] && programs+=" rookery"
for p in $programs; do
    # No display needed: a volunteer may ask over ssh.
    out=$(env -u DISPLAY -u WAYLAND_DISPLAY "$root/usr/bin/$p" --version 2>&1) || fail "$p --version exited $?"
    echo "$p --version: $out"
    [ "$out" = "$p $version" ] || fail "$p --version said '$out', not '$p $version'"
    env -u DISPLAY -u WAYLAND_DISPLAY "$root/usr/bin/$p" --help >/dev/null 2>&1 || fail "$p --help failed"
done

if [ "${ui^^}" = ON ]; then
    echo "== desktop entry and AppStream metainfo"
    desktop-file-validate "$root/usr/share/applications/rookery.desktop" || fail "desktop-file-validate"
    appstreamcli validate --no-net "$root/usr/share/metainfo/invalid.rookery.Rookery.metainfo.xml" ||
        fail "appstreamcli validate"
    for s in 16 48 256; do
        file "$root/usr/share/icons/hicolor/${s}x${s}/apps/rookery.png" | grep -q "PNG image data, $s x $s" ||
            fail "the ${s}x${s} icon is not a ${s}x${s} PNG"
    done
fi

echo "== systemd units"
for unit in "$root/usr/lib/systemd/user/rookery-node.service" \
    "$root/usr/lib/systemd/system/rookery-coordinator.service"; do
    grep -q "^ExecStart=/usr/bin/" "$unit" || fail "$(basename "$unit"): ExecStart does not name /usr/bin"
done
for key in DynamicUser=yes ProtectSystem=strict StateDirectory=rookery-coordinator NoNewPrivileges=yes \
    IOSchedulingClass=idle; do
    grep -qx "$key" "$root/usr/lib/systemd/system/rookery-coordinator.service" || fail "coordinator unit lacks $key"
done
# The node feeds strangers' tensors to LibTorch: it gets the same sandbox, and both have
# a memory and task ceiling.
for key in ProtectSystem=strict ProtectHome=read-only PrivateTmp=yes NoNewPrivileges=yes \
    SystemCallFilter=@system-service "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK" MemoryMax=75% \
    TasksMax=512; do
    grep -qx "$key" "$root/usr/lib/systemd/user/rookery-node.service" || fail "node unit lacks $key"
done
for key in MemoryMax=4G TasksMax=256; do
    grep -qx "$key" "$root/usr/lib/systemd/system/rookery-coordinator.service" || fail "coordinator unit lacks $key"
done
# systemd-analyze checks the syntax and every setting against this systemd; it needs
# the programs where the units say, so it looks at copies that point into the tree.
if command -v systemd-analyze >/dev/null; then
    mkdir -p "$tmp/units"
    for unit in "$root"/usr/lib/systemd/{user,system}/rookery-*.service; do
        sed "s|/usr/bin/|$root/usr/bin/|" "$unit" >"$tmp/units/$(basename "$unit")"
    done
    if out=$(systemd-analyze verify --man=no "$tmp"/units/*.service 2>&1); then
        echo "systemd-analyze verify: ok"
    elif grep -qiE 'offline|failed to initialize|no such file.*bus|Failed to connect' <<<"$out"; then
        echo "systemd-analyze verify: cannot run here (no systemd): $out" | head -n 2
    else
        echo "$out"
        fail "systemd-analyze verify"
    fi
fi

if [ "$failures" -gt 0 ]; then
    echo "check_packages: $failures problem(s)"
    exit 1
fi
echo "check_packages: all packages good"
