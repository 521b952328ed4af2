#!/usr/bin/env bash
# Clang's thread-safety analysis over the library and the apps: every lock annotation of
# include/fusebox/thread_annotations.h (FUSEBOX_GUARDED_BY, FUSEBOX_REQUIRES, ...) is checked, and
# any finding fails. Syntax only (nothing is built), with clang++-16, from the repository root:
#
#   scripts/check-thread-safety.sh [build-dir]     default build dir: build/release
#
# Checked: every .cc of src/, every public header on its own (and the test of each header with
# annotated templates, which instantiates them), and each .cc of apps/ that uses the
# annotations (itself or through a header it includes from its own tree), compiled with the include
# paths and definitions the build gives it (the build dir's compile_commands.json; it need not be
# built). Without a configured build dir the apps are skipped, with a note.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
clang="${CLANGXX:-clang++-16}"
build_dir="${1:-build/release}"
if ! command -v "$clang" >/dev/null; then
  echo "check-thread-safety: $clang not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

analysis=(-std=c++20 -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror=thread-safety
  -Werror=thread-safety-beta)
failed=0
checked=0
check() {  # check FILE ARGS... (ARGS: include paths and definitions)
  local file="$1"
  shift
  checked=$((checked + 1))
  if ! "$clang" "${analysis[@]}" "$@" "$file"; then
    failed=1
  fi
}

# The library's sources.
while IFS= read -r f; do
  check "$f" -Iinclude -Isrc
done < <(find src -type f -name '*.cc' | LC_ALL=C sort)

# Each public header alone, so a header no source of src/ includes is checked too.
unit_dir="$(mktemp -d)"
trap 'rm -rf "$unit_dir"' EXIT
while IFS= read -r h; do
  unit="$unit_dir/$(echo "${h#include/}" | tr '/' '_').cc"
  printf '#include "%s"\n' "${h#include/}" >"$unit"
  check "$unit" -Iinclude
done < <(find include/fusebox -type f -name '*.h' | LC_ALL=C sort)

# A template is analysed only where it is instantiated: for each public header with annotated
# templates, its own test (tests/NAME_test.cc) instantiates them.
while IFS= read -r h; do
  if grep -q 'FUSEBOX_GUARDED_BY' "$h" && grep -q '^template <' "$h"; then
    test_file="tests/$(basename "$h" .h)_test.cc"
    if [ -f "$test_file" ]; then
      check "$test_file" -Iinclude -Isrc -Itests -DBOOST_ASIO_NO_DEPRECATED
    fi
  fi
done < <(find include/fusebox -type f -name '*.h' | LC_ALL=C sort)

# The apps' sources that use the annotations, with their build flags.
db="$build_dir/compile_commands.json"
apps=0
if [ -f "$db" ]; then
  marker='FUSEBOX_(GUARDED_BY|PT_GUARDED_BY|REQUIRES|EXCLUDES)'
  while IFS=$'\t' read -r file flags; do
    uses=0
    if grep -qE "$marker" "$file"; then
      uses=1
    else
      # The headers it includes from the apps' tree ("dir/name.h", relative to any -I of its own).
      while IFS= read -r inc; do
        for dir in "$(dirname "$file")" apps apps/vin-gateway apps/fusebox-sim apps/vpic-sim; do
          if [ -f "$dir/$inc" ] && grep -qE "$marker" "$dir/$inc"; then
            uses=1
          fi
        done
      done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
    fi
    if [ "$uses" -eq 1 ]; then
      apps=$((apps + 1))
      read -r -a args <<<"$flags"
      check "$file" "${args[@]}"
    fi
  done < <(python3 - "$db" "$root" <<'PY'
import json, shlex, sys
db, root = sys.argv[1], sys.argv[2]
seen = set()
for entry in json.load(open(db)):
    f = entry["file"]
    if not f.startswith(root + "/apps/") or not f.endswith(".cc") or f in seen:
        continue
    seen.add(f)
    words = shlex.split(entry.get("command", "")) if "command" in entry else entry["arguments"]
    keep, i = [], 0
    while i < len(words):
        w = words[i]
        if w in ("-I", "-isystem", "-D") and i + 1 < len(words):
            keep += [w + words[i + 1]] if w != "-isystem" else [w, words[i + 1]]
            i += 2
            continue
        if w.startswith(("-I", "-D")):
            keep.append(w)
        i += 1
    print(f"{f}\t{' '.join(keep)}")
PY
  )
else
  echo "check-thread-safety: note: $db missing; apps/ skipped (configure with cmake --preset release)"
fi

if [ "$failed" -ne 0 ]; then
  echo "check-thread-safety: FAILED (findings above)" >&2
  exit 1
fi
echo "check-thread-safety: ${checked} files (${apps} of apps/), no findings"
