#!/usr/bin/env bash
# Clang's thread-safety analysis over the library's sources: every lock annotation of
# src/internal/thread_annotations.h (GUARDED_BY, REQUIRES, ...) is checked, and any finding fails.
# Syntax only (nothing is built), with clang++-16, from the repository root:
#
#   scripts/check-thread-safety.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
clang="${CLANGXX:-clang++-16}"
if ! command -v "$clang" >/dev/null; then
  echo "check-thread-safety: $clang not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

failed=0
checked=0
while IFS= read -r f; do
  checked=$((checked + 1))
  if ! "$clang" -std=c++20 -fsyntax-only -Iinclude -Isrc -Wthread-safety -Wthread-safety-beta \
    -Werror=thread-safety -Werror=thread-safety-beta "$f"; then
    failed=1
  fi
done < <(find src -path src/redis -prune -o -type f -name '*.cc' -print | LC_ALL=C sort)
if [ "$failed" -ne 0 ]; then
  echo "check-thread-safety: FAILED (findings above)" >&2
  exit 1
fi
echo "check-thread-safety: ${checked} files, no findings"
