#!/usr/bin/env bash
# Runs clang-tidy-16 over the library and the apps:
#   - the library (config: .clang-tidy): every .cc under src/ that the build compiles, the
#     generated units that include each public header on its own (tests/CMakeLists.txt,
#     <build>/tests/header_check/), and through HeaderFilterRegex the headers of include/fusebox/
#     and src/ they include;
#   - the apps (config: apps/.clang-tidy, the bugprone and performance families): every .cc under
#     apps/ that the build compiles, and the apps' headers they include.
#
#   scripts/run-clang-tidy.sh [build-dir]     default build dir: build/release
#
# Needs a configured build dir with compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS is on);
# it need not be built. Runs two files at a time (TIDY_JOBS), each within 300 s of CPU
# (TIDY_FILE_CPU_LIMIT) and 40 min of wall time (TIDY_FILE_WALL_LIMIT), tried twice. Exits 1 on
# any finding (WarningsAsErrors: '*') or a file over its limits twice.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

build_dir="${1:-build/release}"
db="$build_dir/compile_commands.json"
clang_tidy="${CLANG_TIDY:-clang-tidy-16}"
jobs="${TIDY_JOBS:-2}"
cpu_limit="${TIDY_FILE_CPU_LIMIT:-300}"    # seconds of CPU for one file
wall_limit="${TIDY_FILE_WALL_LIMIT:-2400}"  # seconds of wall time for one file

if ! command -v "$clang_tidy" >/dev/null; then
  echo "run-clang-tidy: $clang_tidy not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if [ ! -f "$db" ]; then
  echo "run-clang-tidy: $db missing; configure first (cmake --preset release)" >&2
  exit 1
fi

# The library's translation units: src/**/*.cc that appear in the compilation database.
files=()
while IFS= read -r f; do
  if grep -qF "\"file\": \"$root/$f\"" "$db"; then
    files+=("$f")
  else
    echo "run-clang-tidy: note: $f is not in $db (not compiled by any target); skipped" >&2
  fi
done < <(find src -type f -name '*.cc' | LC_ALL=C sort)
if [ ${#files[@]} -eq 0 ]; then
  echo "run-clang-tidy: no source files of src/ in $db" >&2
  exit 1
fi
src_count=${#files[@]}
# The apps' translation units (apps/.clang-tidy applies to them), when the apps are configured.
app_count=0
while IFS= read -r f; do
  if grep -qF "\"file\": \"$root/$f\"" "$db"; then
    files+=("$f")
    app_count=$((app_count + 1))
  fi
done < <(find apps -type f -name '*.cc' | LC_ALL=C sort)
# One unit per public header, so headers no file of src/ includes are checked too.
header_units=0
while IFS= read -r f; do
  files+=("$f")
  header_units=$((header_units + 1))
done < <(grep -o '"file": "[^"]*/header_check/[^"]*\.cc"' "$db" | sed 's/^"file": "//; s/"$//' |
           LC_ALL=C sort -u)
if [ "$header_units" -eq 0 ]; then
  echo "run-clang-tidy: no header_check units in $db (configure with tests enabled)" >&2
  exit 1
fi

echo "run-clang-tidy: $clang_tidy on $src_count files of src/, $header_units public headers" \
  "and $app_count files of apps/"
# One file: clang-tidy under limits, so that a file the tool cannot finish is named instead of
# holding the run: 300 s of CPU (the slowest file takes about 25 s) and 40 minutes of wall time
# (a run at the lowest priority beside the builds may wait long for a core). A file stopped by
# either is tried once more, then fails the run.
tidy_one() {
  local attempt rc
  for attempt in 1 2; do
    rc=0
    (ulimit -t "$cpu_limit" && exec timeout -k 10 "$wall_limit" "$clang_tidy" -p "$build_dir" \
      --quiet "$1") || rc=$?
    # 124/137: timeout's signals; 152 (128 + SIGXCPU): the CPU limit.
    if [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ "$rc" -ne 152 ]; then
      return "$rc"
    fi
    echo "run-clang-tidy: $1: stopped over its limits (exit $rc, attempt $attempt of 2)" >&2
  done
  return "$rc"
}
export -f tidy_one
export clang_tidy build_dir cpu_limit wall_limit
# xargs exits 123 when any invocation fails; each file is reported on its own.
# shellcheck disable=SC2016 # $1 is the inner shell's argument, expanded there
if ! printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$jobs" bash -c 'tidy_one "$1"' tidy_one; then
  echo "run-clang-tidy: FAILED (findings above)" >&2
  exit 1
fi
echo "run-clang-tidy: clean"
