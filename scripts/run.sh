#!/usr/bin/env bash
# The README's first command: sets up a fresh clone and runs fusebox's main job.
#
#   scripts/run.sh [args for the main job...]
#
# 1. installs the Debian packages fusebox needs (scripts/install-deps.sh; instant when present),
# 2. configures and builds the `release` preset into build/release,
# 3. runs the main job: the simulator on the lesson scenario
#    (build/release/bin/fusebox-sim run scenarios/lesson5.toml). Extra arguments are passed on,
#    e.g. `scripts/run.sh --format json`.
# Exits non-zero on the first failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "==> run: installing dependencies"
bash scripts/install-deps.sh

echo "==> run: configuring and building the release preset (build/release)"
cmake --preset release
cmake --build --preset release

sim="build/release/bin/fusebox-sim"
scenario="scenarios/lesson5.toml"
if [ ! -x "$sim" ]; then
  echo "run: error: $sim was not built (is apps/fusebox-sim part of the build?)" >&2
  exit 1
fi
if [ ! -f "$scenario" ]; then
  echo "run: error: scenario $scenario is missing" >&2
  exit 1
fi

echo "==> run: $sim run $scenario $*"
exec "$sim" run "$scenario" "$@"
