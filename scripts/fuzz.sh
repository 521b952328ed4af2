#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-16 (the `fuzz` preset, build/fuzz) and runs each for a
# bounded time on a corpus seeded from the project's own data (docs/fuzzing.md says what each
# target checks, how fast it runs and how much it covers):
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 20: 8 targets, one per core at a time;
#                                             FUZZ_JOBS=N runs N at a time, at most 4)
#
#   vin_fuzzer              VIN normalizer + validator; seeds: every VIN of tests/data/vin-vectors.tsv
#   vpic_parser_fuzzer      vPIC response parser; seeds: the recorded responses in apps/vpic-sim/data
#   http_request_fuzzer     a client's bytes -> request parser -> router; tests/vin_gateway/fuzz/seeds
#   upstream_answer_fuzzer  an upstream's bytes -> the vPIC client's answer reader; tests/vin_gateway/fuzz/seeds
#   gateway_config_fuzzer   the gateway's --config TOML; tests/vin_gateway/fuzz/seeds
#   sim_scenario_fuzzer     fusebox-sim's scenario loader; tests/fuzz/seeds and scenarios/*.toml
#   vpic_fault_json_fuzzer  vpic-sim's control API fault body; tests/fuzz/seeds
#   vpic_schedule_fuzzer    vpic-sim's --schedule reader; tests/fuzz/seeds and scenarios/*.toml
#
# Only the files directly in a seeds/<target>/ folder are seeds: seeds/<target>/crashes/ keeps
# inputs that crash a target until the defect is fixed, and is not run here nor by the smoke tests.
#
# A crash, a sanitizer report, a leak or a timeout fails the run; libFuzzer writes the input that
# did it into build/fuzz/artifacts/ (reproduce with `build/fuzz/bin/<target> <file>`). The corpus
# grown by a run stays in build/fuzz/corpus/ and seeds the next run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

seconds="${1:-20}"
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


out="build/fuzz"
rm -rf "$out/seeds"
mkdir -p "$out/artifacts" "$out/seeds"

# libFuzzer reads corpus directories recursively, one file per input: seeds are staged flat.
n=0
mkdir -p "$out/seeds/vin"
while IFS=$'\t' read -r vin _; do
  case "$vin" in ''|'#'*|vin) continue ;; esac
  n=$((n + 1))
  printf '%s' "$vin" >"$out/seeds/vin/vector-$n"
done <tests/data/vin-vectors.tsv
n=0
mkdir -p "$out/seeds/vpic"
while IFS= read -r -d '' file; do
  n=$((n + 1))
  cp "$file" "$out/seeds/vpic/response-$n.json"
done < <(find apps/vpic-sim/data -name '*.json' -print0 | sort -z)

# stage_seeds NAME DIR...: the regular files directly in each DIR (never crashes/).
stage_seeds() {
  local name="$1" dir
  shift
  mkdir -p "$out/seeds/$name"
  for dir in "$@"; do
    find "$dir" -maxdepth 1 -type f -exec cp -t "$out/seeds/$name" {} +
  done
}
stage_seeds http_request tests/vin_gateway/fuzz/seeds/http_request
stage_seeds upstream_answer tests/vin_gateway/fuzz/seeds/upstream_answer
stage_seeds gateway_config tests/vin_gateway/fuzz/seeds/gateway_config
stage_seeds sim_scenario tests/fuzz/seeds/sim_scenario scenarios
stage_seeds vpic_fault_json tests/fuzz/seeds/vpic_fault_json
stage_seeds vpic_schedule tests/fuzz/seeds/vpic_schedule scenarios

# Each target is one libFuzzer process on one core: FUZZ_JOBS targets (default: the number of
# cores, at most 4) run side by side, each writing its own log, shown when it ends.
jobs="${FUZZ_JOBS:-$(nproc)}"
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: error: FUZZ_JOBS must be a positive whole number, got '$jobs'" >&2
  exit 2
fi
if [ "$jobs" -gt 4 ]; then
  jobs=4
fi
mkdir -p "$out/logs"

# run_target TARGET SEEDS MAX_LEN [DICTIONARY]: one fuzzing run, its output in logs/TARGET.log.
run_target() {
  local target="$1" seeds="$2" max_len="$3" dict="${4:-}"
  local extra=()
  if [ -n "$dict" ]; then
    extra+=("-dict=$dict")
  fi
  mkdir -p "$out/corpus/$seeds"
  "$out/bin/$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/artifacts/$target-" \
    "${extra[@]}" "$out/corpus/$seeds" "$out/seeds/$seeds" >"$out/logs/$target.log" 2>&1
}

targets=(
  "vin_fuzzer vin 128"
  "vpic_parser_fuzzer vpic 65536"
  "http_request_fuzzer http_request 16384 tests/vin_gateway/fuzz/http_request.dict"
  "upstream_answer_fuzzer upstream_answer 8192 tests/vin_gateway/fuzz/upstream_answer.dict"
  "gateway_config_fuzzer gateway_config 4096 tests/vin_gateway/fuzz/gateway_config.dict"
  "sim_scenario_fuzzer sim_scenario 8192 tests/fuzz/toml.dict"
  "vpic_fault_json_fuzzer vpic_fault_json 1024 tests/fuzz/fault_json.dict"
  "vpic_schedule_fuzzer vpic_schedule 8192 tests/fuzz/toml.dict"
)
# The targets built are the ones run: this list, not the preset's, is the one that counts.
names=()
for spec in "${targets[@]}"; do
  names+=("${spec%% *}")
done
echo "==> fuzz: building the libFuzzer targets (cmake --preset fuzz, build/fuzz)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target "${names[@]}"

echo "==> fuzz: ${#targets[@]} targets, ${seconds}s each, $jobs at a time (logs in $out/logs)"
declare -A running=()  # pid -> target
failed=()
# reap_one: waits for one running target, shows its log's summary (all of it on failure).
reap_one() {
  local pid rc=0 target
  wait -n -p pid "${!running[@]}" || rc=$?
  target="${running[$pid]}"
  unset "running[$pid]"
  if [ "$rc" -eq 0 ]; then
    echo "==> fuzz: $target: no crash, leak or timeout ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$out/logs/$target.log" | grep -o '[0-9]*$') runs)"
  else
    echo "==> fuzz: $target FAILED (exit $rc); its log:" >&2
    cat "$out/logs/$target.log" >&2
    failed+=("$target")
  fi
}
for spec in "${targets[@]}"; do
  read -r -a args <<<"$spec"
  while [ "${#running[@]}" -ge "$jobs" ]; do
    reap_one
  done
  echo "==> fuzz: ${args[0]} for ${seconds}s (corpus $out/corpus/${args[1]}, seeds $out/seeds/${args[1]})"
  run_target "${args[@]}" &
  running[$!]="${args[0]}"
done
while [ "${#running[@]}" -gt 0 ]; do
  reap_one
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "==> fuzz: FAILED: ${failed[*]} (inputs in $out/artifacts/)" >&2
  exit 1
fi
echo "==> fuzz: no crash, leak or timeout"
