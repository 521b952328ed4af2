#!/usr/bin/env bash
# Runs shellcheck on every shell script of fusebox; exits 1 on any finding (style level and up),
# 2 when shellcheck is missing.
#
#   scripts/check-shell.sh
#
# Scripts: the files git knows (tracked, or new and not ignored) whose name ends in .sh or whose
# first line is a sh/bash shebang, so a new script is covered without editing a list. A script
# with a shebang is checked as a program, following the files it sources (-x; their
# `# shellcheck source=` paths are relative to the repo root, where this runs). A file without
# one is a library that scripts source: it must name its shell (`# shellcheck shell=bash`) and is
# checked on its own with SC2154 ("referenced but not assigned") off, since it reads globals that
# the script sourcing it assigns; that script's own check sees both sides.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if ! command -v shellcheck >/dev/null; then
  echo "check-shell: shellcheck not found (scripts/install-deps.sh installs it)" >&2
  exit 2
fi

programs=()
libraries=()
while IFS= read -r -d '' file; do
  [[ -f "$file" ]] || continue
  first="$(head -c 128 -- "$file" | head -n 1 | tr -d '\0')"
  if [[ "$first" =~ ^#!.*[/[:space:]](ba|da|k)?sh([[:space:]]|$) ]]; then
    programs+=("$file")
  elif [[ "$file" == *.sh ]]; then
    libraries+=("$file")
  fi
done < <(git ls-files -z --cached --others --exclude-standard | LC_ALL=C sort -z)
if [ $((${#programs[@]} + ${#libraries[@]})) -eq 0 ]; then
  echo "check-shell: no shell scripts found" >&2
  exit 1
fi

findings="$(mktemp)"
trap 'rm -f "$findings"' EXIT
if [ ${#programs[@]} -gt 0 ]; then
  shellcheck -x -f gcc "${programs[@]}" >>"$findings" || true
fi
if [ ${#libraries[@]} -gt 0 ]; then
  shellcheck -x -f gcc -e SC2154 "${libraries[@]}" >>"$findings" || true
fi

checked=$((${#programs[@]} + ${#libraries[@]}))
count="$(wc -l <"$findings")"
if [ "$count" -ne 0 ]; then
  cat "$findings"
  echo "check-shell: FAILED: ${count} finding(s) in ${checked} scripts; fix them, or disable one" \
    "with a '# shellcheck disable=SCxxxx' comment that says why" >&2
  exit 1
fi
echo "check-shell: ${checked} scripts clean (${#programs[@]} programs, ${#libraries[@]} sourced)"
