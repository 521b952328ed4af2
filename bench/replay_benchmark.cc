// Benchmarks of `fusebox-sim replay` and `advise` (apps/fusebox-sim): reading a day of a busy
// gateway's JSON log (a million lines) and replaying it through 100 candidate configurations on
// all cores (docs/benchmarks.md, "Replaying a day of logs"). Run in the release preset:
//   build/release/bin/fusebox-bench --benchmark_filter='BM_Replay'
// The log is written once to a temporary file: 1,000,000 request lines over 24 hours (11.6 a
// second), half of them fresh cache hits, the rest each its own call of vPIC (20 ms), with four
// outages (errors, a hang, a crawl of 4 s answers, errors again) of 10 minutes each; the gateway
// that logged it opened no breaker, so every call was observed.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "advise.h"
#include "gateway_config.h"
#include "replay.h"
#include "replay_log.h"

namespace {

constexpr std::int64_t kLines = 1'000'000;
constexpr std::int64_t kDayMs = 24LL * 3600 * 1000;

std::string Ts(std::int64_t ms) {
  const std::int64_t s = ms / 1000;
  return fmt::format("2026-01-01T{:02}:{:02}:{:02}.{:03}Z", s / 3600, (s / 60) % 60, s % 60,
                     ms % 1000);
}

const std::string& LogPath() {
  static const std::string path = [] {
    const std::string file =
        (std::filesystem::temp_directory_path() / "fusebox_replay_bench_day.log").string();
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    for (std::int64_t i = 0; i < kLines; ++i) {
      const std::int64_t start = i * kDayMs / kLines;
      const std::int64_t hour_ms = start % (6 * 3600 * 1000);
      const std::int64_t quarter = start / (6 * 3600 * 1000);  // four quarters of the day
      const bool outage = hour_ms >= 3 * 3600 * 1000 && hour_ms < 3 * 3600 * 1000 + 600'000;
      const bool hit = i % 2 == 1;
      if (hit) {
        out << fmt::format(
                   R"({{"ts":"{}","level":"info","event":"request","request_id":"r{}","method":"GET","target":"/api/v1/vin/1FTMW1T88MH{:06}","client":"10.0.0.{}","http_status":200,"status":"OK","vin":"1FTMW1T88MH{:06}","source":"cache","upstream_ms":null,"elapsed_ms":0.31}})",
                   Ts(start), i, i % 1000, i % 200, i % 1000)
            << '\n';
        continue;
      }
      std::int64_t latency = 20;
      const char* status = "OK";
      const char* outcome = "success";
      if (outage && (quarter == 0 || quarter == 3)) {
        status = "UPSTREAM_ERROR";
        outcome = "failure";
      } else if (outage && quarter == 1) {
        latency = 7000;
        status = "UPSTREAM_SLOW";
        outcome = "timeout";
      } else if (outage && quarter == 2) {
        latency = 4000;
      }
      out << fmt::format(
                 R"({{"ts":"{}","level":"info","event":"request","request_id":"r{}","method":"GET","target":"/api/v1/vin/1FTMW1T88MJ{:06}","client":"10.0.0.{}","http_status":200,"status":"{}","vin":"1FTMW1T88MJ{:06}","source":"live","upstream":"call","upstream_outcome":"{}","upstream_ms":{},"elapsed_ms":{}.4}})",
                 Ts(start + latency), i, i % 1'000'000, i % 200, status, i % 1'000'000, outcome,
                 latency, latency)
          << '\n';
    }
    return file;
  }();
  return path;
}

void BM_ReplayReadDayLog(benchmark::State& state) {
  const std::string& path = LogPath();
  std::uint64_t lines = 0;
  for (auto _ : state) {
    auto incident = fusebox::sim::ReadIncidentFile(path);
    if (!incident || incident->errors != 0) {
      state.SkipWithError("the log did not read");
      return;
    }
    lines += incident->lines;
    benchmark::DoNotOptimize(incident->arrivals.size());
  }
  state.counters["lines/s"] =
      benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReplayReadDayLog)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// One candidate, one reading: the cost of a replay of the day.
void BM_ReplayDayOnce(benchmark::State& state) {
  auto incident = fusebox::sim::ReadIncidentFile(LogPath());
  if (!incident) {
    state.SkipWithError("the log did not read");
    return;
  }
  const fusebox::sim::GatewaySettings settings = fusebox::sim::DefaultGatewaySettings();
  const auto revivals =
      fusebox::sim::FindRevivals(*incident, settings.breaker.effective_slow_call_duration());
  for (auto _ : state) {
    auto run = fusebox::sim::Replay(*incident, settings, revivals, {});
    benchmark::DoNotOptimize(run);
  }
  state.counters["lines/s"] = benchmark::Counter(
      static_cast<double>(incident->lines) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReplayDayOnce)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// `advise` on the day: 5 thresholds x 5 probe intervals x 4 slow-call durations = 100 candidate
// configurations, on every core (the log read once, outside the timing).
void BM_ReplayDay100Configs(benchmark::State& state) {
  auto incident = fusebox::sim::ReadIncidentFile(LogPath());
  if (!incident) {
    state.SkipWithError("the log did not read");
    return;
  }
  fusebox::sim::AdviseOptions options;
  options.axes = {{"failure_threshold", {"1", "2", "3", "5", "10"}},
                  {"probe_interval", {"500ms", "1s", "2s", "5s", "10s"}},
                  {"slow_call_duration", {"1s", "2s", "3s", "7s"}}};
  options.jobs = std::max(1U, std::thread::hardware_concurrency());
  for (auto _ : state) {
    auto advice =
        fusebox::sim::Advise(*incident, fusebox::sim::DefaultGatewaySettings(), options, {});
    if (!advice || advice->candidates.size() != 100) {
      state.SkipWithError("the advice failed");
      return;
    }
    benchmark::DoNotOptimize(advice->front.size());
  }
  state.counters["configs"] = 100;
}
BENCHMARK(BM_ReplayDay100Configs)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
