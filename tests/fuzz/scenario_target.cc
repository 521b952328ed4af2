// SimScenario: TOML text through fusebox-sim's scenario loader (and vpic-sim's schedule reader).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "fuzz/fuzz_targets.h"
#include "scenario.h"
#include "schedule.h"

namespace fusebox::fuzz {
namespace {

using sim::Micros;

// What the loader promises of every scenario it returns (scenario.h's ranges).
void CheckScenario(const sim::Scenario& s) {
  Check(!s.breaker.Validate().has_value());
  Check(s.duration > 0 && s.duration <= sim::kMaxDuration);
  Check(s.upstream_latency >= 0 && s.upstream_latency <= sim::kMaxDuration);
  Check(!s.streams.empty());
  double expected_calls = 0;
  for (const sim::Stream& stream : s.streams) {
    Check(stream.rate >= sim::kMinRate && stream.rate <= sim::kMaxRate);
    Check(stream.start >= 0 && stream.start <= sim::kMaxDuration);
    expected_calls += stream.rate *
                      static_cast<double>(std::max<Micros>(0, s.duration - stream.start)) /
                      static_cast<double>(sim::kMicrosPerSecond);
  }
  Check(expected_calls <= sim::kMaxExpectedCalls * (1 + 1e-9));
  Micros previous_to = 0;
  for (const sim::Phase& phase : s.phases) {
    Check(phase.from >= previous_to && phase.to > phase.from && phase.to <= sim::kMaxDuration);
    Check(phase.latency >= 0 && phase.latency <= sim::kMaxDuration);
    if (phase.mode == sim::Mode::kFragile) {
      Check(phase.capacity >= 1 && phase.relapse > 0);
    }
    if (phase.mode == sim::Mode::kWarming) {
      Check(phase.capacity >= 1 && phase.relapse > 0);
      Check(phase.cold_capacity >= 1 && phase.cold_capacity <= phase.capacity);
      Check(phase.warmup > 0);
    }
    if (phase.mode == sim::Mode::kQueue || phase.mode == sim::Mode::kRefuse) {
      Check(phase.capacity >= 1 && phase.capacity <= 1'000'000);
    }
    previous_to = phase.to;
  }
  if (s.limit) {
    Check(s.limit->has_concurrency_limit() || s.limit->has_throttle());
    if (s.limit->adaptive) {
      Check(!s.limit->adaptive_config.Validate().has_value());
    } else if (s.limit->has_concurrency_limit()) {
      Check(s.limit->max_in_flight >= 1 && s.limit->max_in_flight <= 1'000'000);
    }
    Check(s.limit->throttle.k == 0.0 || !s.limit->throttle.Validate().has_value());
  }
}

vpic_sim::FaultMode SameMode(sim::Mode mode) {
  switch (mode) {
    case sim::Mode::kOk:
      return vpic_sim::FaultMode::kOk;
    case sim::Mode::kError:
      return vpic_sim::FaultMode::kError;
    case sim::Mode::kHang:
      return vpic_sim::FaultMode::kHang;
    case sim::Mode::kSlow:
      return vpic_sim::FaultMode::kSlow;
    case sim::Mode::kFragile:
      return vpic_sim::FaultMode::kCapacity;
    case sim::Mode::kQueue:
      return vpic_sim::FaultMode::kQueue;  // both tools serve it: servers and one line
    case sim::Mode::kWarming:
    case sim::Mode::kRefuse:
      break;  // the simulator's alone: vpic-sim refuses a file that uses one (checked below)
  }
  __builtin_trap();
}

}  // namespace

int SimScenario(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = AsText(data, size);
  auto file = sim::LoadScenarioString(text, "fuzz.toml");
  if (!file) {
    const sim::LoadError& e = file.error();
    Check(e.file == "fuzz.toml");
    Check(!e.message.empty());
    const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    Check(e.line >= 0 && e.line <= lines + 1);
    Check(e.column >= 0);
    Check(e.line > 0 || e.column == 0);
    Check(e.ToString().ends_with(e.message));
    return 0;
  }
  CheckScenario(file->base());
  auto base = sim::BuildScenario(*file, {});
  Check(base.has_value());
  for (const sim::Scenario& variant : file->variants()) {
    CheckScenario(variant);
    sim::BuildOptions options;
    options.variant = variant.name;
    Check(sim::BuildScenario(*file, options).has_value());
  }

  // vpic-sim plays the base scenario's [upstream]: where it accepts the file too, the same way.
  auto schedule = vpic_sim::ParseSchedule(text, "fuzz.toml");
  const bool sim_only =
      std::any_of(file->base().phases.begin(), file->base().phases.end(), [](const sim::Phase& p) {
        return p.mode == sim::Mode::kWarming || p.mode == sim::Mode::kRefuse;
      });
  Check(!(sim_only && schedule));
  if (schedule) {
    const sim::Scenario& s = file->base();
    Check(schedule->phases.size() == s.phases.size());
    for (std::size_t i = 0; i < s.phases.size() && i < schedule->phases.size(); ++i) {
      Check(schedule->phases[i].from == s.phases[i].from);
      Check(schedule->phases[i].to == s.phases[i].to);
      Check(schedule->phases[i].spec.mode == SameMode(s.phases[i].mode));
      if (s.phases[i].mode == sim::Mode::kQueue) {
        Check(schedule->phases[i].spec.capacity == static_cast<int>(s.phases[i].capacity));
      }
    }
    if (schedule->healthy_latency) {
      Check(*schedule->healthy_latency == s.upstream_latency);
    }
  }
  return 0;
}

}  // namespace fusebox::fuzz
