#!/usr/bin/env bash
# Checks that every C++ file of fusebox is formatted by clang-format-16 with the repo's
# .clang-format (Google style, 100 columns).
#
#   scripts/check-format.sh         report unformatted files, exit 1 if any
#   scripts/check-format.sh --fix   format them in place
#
# Files: *.h *.hpp *.cc *.cpp under include/ src/ apps/ tests/ bench/ examples/ (build trees
# excluded).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

clang_format="${CLANG_FORMAT:-clang-format-16}"
if ! command -v "$clang_format" >/dev/null; then
  echo "check-format: $clang_format not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

dirs=()
for d in include src apps tests bench examples; do
  if [ -d "$d" ]; then dirs+=("$d"); fi
done
mapfile -t files < <(find "${dirs[@]}" \( -name build -o -name 'build-*' -o -name node_modules \) \
  -prune -o -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.cpp' \) -print |
  LC_ALL=C sort)
if [ ${#files[@]} -eq 0 ]; then
  echo "check-format: no C++ files found" >&2
  exit 1
fi

if [ "${1:-}" = "--fix" ]; then
  "$clang_format" -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi

if ! "$clang_format" --dry-run -Werror "${files[@]}"; then
  echo "check-format: FAILED; run scripts/check-format.sh --fix (clang-format-16 -i) and review" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted correctly"
