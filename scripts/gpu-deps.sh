#!/usr/bin/env bash
# Fills .deps/usr with the headers and libraries that the GPU half's build
# needs and a GPU machine's image may lack (toml++, nlohmann_json, SQLite,
# PCRE2, utf8proc, CLI11, Gloo's headers), from this machine's Debian packages, for machines
# that cannot reach a package registry. test/gpu/build-gpu-half.sh and
# bench/run_h200.sh use .deps/usr when it is there; carry it along.
# .deps/wheels holds the pure-Python wheels the node's Python lacks (gguf,
# for `dice model import` there), at python/requirements.txt's pins.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download -q libtomlplusplus-dev libtomlplusplus3 nlohmann-json3-dev \
  libsqlite3-dev libsqlite3-0 libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2 \
  libcli11-dev libgloo-dev 2>/dev/null
mkdir extracted
for deb in *.deb; do dpkg -x "$deb" extracted; done
out=$root/.deps/usr
rm -rf "$out"
mkdir -p "$out/lib" "$out/share"
cp -a extracted/usr/include "$out/"
cp -a extracted/usr/share/cmake "$out/share/"
# The shared libraries only: the GPU half links them dynamically.
cp -a extracted/usr/lib/x86_64-linux-gnu/*.so* "$out/lib/"
cp -a extracted/usr/lib/x86_64-linux-gnu/cmake "$out/lib/"
rm -rf "$root/.deps/wheels"
python3 -m pip download -q --no-deps --only-binary=:all: -d "$root/.deps/wheels" \
  "$(grep '^gguf==' "$root/python/requirements.txt")"
echo "gpu-deps: $(du -sh "$out" | cut -f1) in $out, $(ls "$root/.deps/wheels") in .deps/wheels"
