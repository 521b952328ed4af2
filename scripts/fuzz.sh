#!/usr/bin/env bash
# Builds the vin-gateway libFuzzer targets with clang-16 (the `fuzz` preset, build/fuzz) and runs
# each for a bounded time on a corpus seeded from the project's own data:
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 30)
#
#   vin_fuzzer          VIN normalizer + validator; seeds: every VIN of tests/data/vin-vectors.tsv
#   vpic_parser_fuzzer  vPIC response parser; seeds: the recorded responses in apps/vpic-sim/data
#
# A crash, a sanitizer report, a leak or a timeout fails the run; libFuzzer writes the input that
# did it into build/fuzz/artifacts/ (reproduce with `build/fuzz/bin/<target> <file>`). The corpus
# grown by a run stays in build/fuzz/corpus/ and seeds the next run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

seconds="${1:-30}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: error: SECONDS_PER_TARGET must be a positive whole number, got '$seconds'" >&2
  exit 2
fi
# shellcheck disable=SC2043  # a list of one tool, kept a loop so that another can join
for tool in clang++-16; do
  if ! command -v "$tool" >/dev/null; then
    echo "fuzz: error: $tool not found (scripts/install-deps.sh installs clang-16)" >&2
    exit 1
  fi
done

echo "==> fuzz: building the libFuzzer targets (cmake --preset fuzz, build/fuzz)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

out="build/fuzz"
mkdir -p "$out/artifacts" "$out/corpus/vin" "$out/corpus/vpic" "$out/seeds/vin" "$out/seeds/vpic"

# libFuzzer reads corpus directories flat: one file per seed input.
n=0
while IFS=$'\t' read -r vin _; do
  case "$vin" in ''|'#'*|vin) continue ;; esac
  n=$((n + 1))
  printf '%s' "$vin" >"$out/seeds/vin/vector-$n"
done <tests/data/vin-vectors.tsv
n=0
while IFS= read -r -d '' file; do
  n=$((n + 1))
  cp "$file" "$out/seeds/vpic/response-$n.json"
done < <(find apps/vpic-sim/data -name '*.json' -print0 | sort -z)

run_target() {
  local target="$1" corpus="$2" seeds="$3" max_len="$4"
  echo "==> fuzz: $target for ${seconds}s (corpus $corpus, seeds $seeds)"
  "$out/bin/$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/artifacts/$target-" \
    "$corpus" "$seeds"
}

run_target vin_fuzzer "$out/corpus/vin" "$out/seeds/vin" 128
run_target vpic_parser_fuzzer "$out/corpus/vpic" "$out/seeds/vpic" 65536
echo "==> fuzz: no crash, leak or timeout"
