#!/usr/bin/env bash
# Installs fusebox from a build tree into a temporary prefix, then configures, builds and runs
# the consumer programs of tests/package (fusebox::fusebox, fusebox::asio) against it with
# find_package(fusebox).
#
#   tests/package/run.sh [build-dir]      default: build/release (must be built)
#
# Exits non-zero unless the consumer builds and prints OK. The prefix is removed at the end
# (set KEEP_PACKAGE_TMP=1 to keep it). With FUSEBOX_INSTALLED_PREFIX=DIR (/usr after the
# libfusebox-dev package, tests/deb/run.sh), nothing is installed: the consumer is built against
# what DIR holds.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

build_dir="${1:-build/release}"
installed_prefix="${FUSEBOX_INSTALLED_PREFIX:-}"
if [ -z "$installed_prefix" ] && [ ! -f "$build_dir/cmake_install.cmake" ]; then
  echo "package: $build_dir is not a configured and built fusebox build tree" >&2
  exit 1
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/fusebox-package.XXXXXX")"
if [ "${KEEP_PACKAGE_TMP:-0}" != "1" ]; then
  trap 'rm -rf "$tmp"' EXIT
fi
prefix="$tmp/prefix"
consumer_build="$tmp/consumer-build"

if [ -n "$installed_prefix" ]; then
  prefix="$installed_prefix"
  echo "package: using what $prefix holds"
else
  echo "package: cmake --install $build_dir --prefix $prefix"
  cmake --install "$build_dir" --prefix "$prefix" >"$tmp/install.log" || {
    cat "$tmp/install.log" >&2
    exit 1
  }
fi

echo "package: configuring tests/package against the installed package"
cmake -S tests/package -B "$consumer_build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
cmake --build "$consumer_build"

consumers=(consumer asio_consumer)
if [ -x "$consumer_build/redis_consumer" ]; then consumers+=(redis_consumer); fi
for consumer in "${consumers[@]}"; do
  echo "package: running $consumer"
  output="$("$consumer_build/$consumer")"
  echo "$output"
  if [ "$output" != "OK" ]; then
    echo "package: FAILED: $consumer printed '$output', expected 'OK'" >&2
    exit 1
  fi
done
echo "package: OK (find_package(fusebox) -> fusebox::fusebox and fusebox::asio work from the install tree)"
