// Benchmarks of fusebox-sim (apps/fusebox-sim): simulated calls per second on one core, and a
// 1,000-point sweep on all cores. The target is >= 5 million simulated calls per second and
// a 1,000-point sweep "in seconds". Run in the release preset:
//   build/release/bin/fusebox-bench --benchmark_filter='BM_Sim|BM_Sweep'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include "scenario.h"
#include "simulator.h"
#include "sweep.h"

namespace {

// scenarios/lesson5.toml, inline so that the benchmark does not depend on the working directory.
constexpr const char* kLesson = R"(
seed = 42
duration = "90s"
[breaker]
trip = "consecutive"
failure_threshold = 5
cooldown = "10s"
[traffic]
rate = 1.0
[upstream]
latency = "20ms"
[[upstream.phase]]
from = "10s"
to = "60s"
mode = "error"
)";

fusebox::sim::ScenarioFile LessonFile() {
  auto file = fusebox::sim::LoadScenarioString(kLesson, "lesson5.toml");
  if (!file) {
    std::abort();
  }
  return std::move(*file);
}

// The lesson stretched to 10,000,080 calls (111,112 calls a second for 90 s): about 4.4 million
// admitted calls (2,200 in flight at once), 5.6 million rejected by OPEN.
void BM_SimLesson10M(benchmark::State& state) {
  const fusebox::sim::ScenarioFile file = LessonFile();
  fusebox::sim::BuildOptions options;
  options.overrides = {{"traffic.rate", "111112"}};
  auto scenario = fusebox::sim::BuildScenario(file, options);
  if (!scenario) {
    state.SkipWithError(scenario.error().ToString().c_str());
    return;
  }
  std::uint64_t calls = 0;
  for (auto _ : state) {
    auto run = fusebox::sim::Simulate(*scenario);
    if (!run) {
      state.SkipWithError(run.error().c_str());
      return;
    }
    calls += run->counters.calls;
    benchmark::DoNotOptimize(run->counters);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(calls));
}
BENCHMARK(BM_SimLesson10M)->Unit(benchmark::kMillisecond)->UseRealTime();

// 1,000 cooldowns (0.1 s to 100 s) of the lesson on every core.
void BM_Sweep1000(benchmark::State& state) {
  const fusebox::sim::ScenarioFile file = LessonFile();
  auto param = fusebox::sim::ParseParam("breaker.cooldown=100ms:100s:100ms");
  if (!param) {
    state.SkipWithError(param.error().c_str());
    return;
  }
  fusebox::sim::SweepOptions options;
  options.jobs = std::max(1U, std::thread::hardware_concurrency());
  std::int64_t points = 0;
  for (auto _ : state) {
    auto sweep = fusebox::sim::RunSweep(file, {}, {*param}, options);
    if (!sweep) {
      state.SkipWithError(sweep.error().c_str());
      return;
    }
    points += static_cast<std::int64_t>(sweep->points.size());
    benchmark::DoNotOptimize(sweep->points.data());
  }
  state.SetItemsProcessed(points);
  state.counters["jobs"] = options.jobs;
}
BENCHMARK(BM_Sweep1000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
