// libFuzzer target: vpic-sim's schedule (--schedule TOML).
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fusebox::fuzz::VpicSimSchedule(data, size);
}
