#!/usr/bin/env bash
# The library side by side: fusebox's per-call cost beside two JavaScript circuit breakers from npm
# (opossum, cockatiel) and Debian's python3-circuitbreaker, on a call through a CLOSED breaker that
# succeeds and a call an OPEN breaker rejects, in one go on one machine. Prints a Markdown table
# and writes it, with the raw numbers, to OUT (default build/bench-compare-lib).
#
# Usage: bench/compare/libraries/run.sh [--bin DIR] [--out DIR]
#   --bin DIR  where fusebox-bench is (default build/release/bin)
# The npm packages are installed into OUT at pinned versions (npm install, no install scripts): the
# newest releases that support Debian 12's Node.js 20 (opossum 10 and cockatiel 4 need Node 22).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "${here}/../../.." && pwd)
bin=${root}/build/release/bin
out=${root}/build/bench-compare-lib
py=/usr/bin/python3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
if [[ ! -x "${bin}/fusebox-bench" ]]; then
  echo "run.sh: ${bin}/fusebox-bench is missing: build it first (cmake --build --preset release)" >&2
  exit 2
fi
mkdir -p "${out}"
if [[ ! -f "${out}/package.json" ]]; then
  echo '{"name": "fusebox-bench-compare", "private": true}' >"${out}/package.json"
fi
npm install --prefix "${out}" --no-audit --no-fund --ignore-scripts --save-exact \
  opossum@8.5.0 cockatiel@3.2.1 >/dev/null
cp "${here}/node_breakers.mjs" "${out}/"

"${bin}/fusebox-bench" \
  --benchmark_filter='^BM_AtomicFetchAdd$|^BM_ClosedAcquireRecord/real_time/threads:1$|^BM_OpenReject$' \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json >"${out}/fusebox-bench.json"
node "${out}/node_breakers.mjs" >"${out}/node.jsonl"
"${py}" "${here}/python_breaker.py" >"${out}/python.jsonl"

"${py}" - "${out}" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
bench = json.loads((out / "fusebox-bench.json").read_text())
medians = {b["run_name"].replace("/real_time", ""): b["cpu_time"] for b in bench["benchmarks"]
           if b.get("aggregate_name") == "median"}
rows = [{"library": "fusebox", "version": "this commit", "runtime": "C++20, gcc -O3",
         "path": "closed success", "ns_per_call": medians["BM_ClosedAcquireRecord/threads:1"]},
        {"library": "fusebox", "version": "this commit", "runtime": "C++20, gcc -O3",
         "path": "open rejection", "ns_per_call": medians["BM_OpenReject"]}]
for name in ("node.jsonl", "python.jsonl"):
    rows += [json.loads(line) for line in (out / name).read_text().splitlines() if line]
atomic = medians["BM_AtomicFetchAdd"]
fusebox = {r["path"]: r["ns_per_call"] for r in rows if r["library"] == "fusebox"}
lines = ["| library | version | runtime | closed success, ns/call | open rejection, ns/call |"
         " x fusebox (closed / open) |", "|---|---|---|---|---|---|"]
seen = []
for r in rows:
    if r["library"] in seen:
        continue
    seen.append(r["library"])
    mine = {x["path"]: x["ns_per_call"] for x in rows if x["library"] == r["library"]}
    c, o = mine["closed success"], mine["open rejection"]
    lines.append(f"| {r['library']} | {r['version']} | {r['runtime']} | {c:.1f} | {o:.1f} | "
                 f"{c / fusebox['closed success']:.0f}x / {o / fusebox['open rejection']:.0f}x |")
lines.append("")
lines.append(f"(floor: one atomic fetch_add, {atomic:.2f} ns, on the same machine in the same run)")
table = "\n".join(lines)
(out / "table.md").write_text(table + "\n")
(out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
print(table)
PY
