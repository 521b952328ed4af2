// VpicSimSchedule: TOML text through vpic-sim's schedule reader.
#include <cstddef>
#include <cstdint>
#include <limits>

#include "fuzz/fuzz_support.h"
#include "fuzz/fuzz_targets.h"
#include "schedule.h"

namespace fusebox::fuzz {

int VpicSimSchedule(const std::uint8_t* data, std::size_t size) {
  auto schedule = vpic_sim::ParseSchedule(AsText(data, size), "fuzz.toml");
  if (!schedule) {
    Check(!schedule.error().field.empty());
    Check(schedule.error().message.starts_with("fuzz.toml"));
    return 0;
  }
  if (schedule->healthy_latency) {
    Check(*schedule->healthy_latency >= 0);
  }
  vpic_sim::Micros previous_to = std::numeric_limits<vpic_sim::Micros>::min();
  for (const vpic_sim::Phase& phase : schedule->phases) {
    Check(phase.from >= 0 && phase.to > phase.from && phase.from >= previous_to);
    Check(!phase.spec.Validate().has_value());
    Check(schedule->PhaseAt(phase.from) == &phase);
    Check(schedule->PhaseAt(phase.to - 1) == &phase);
    previous_to = phase.to;
  }
  return 0;
}

}  // namespace fusebox::fuzz
