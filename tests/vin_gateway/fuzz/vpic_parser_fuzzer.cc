// libFuzzer target: the vPIC response parser.
#include "vin_gateway/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fusebox::gateway::fuzz::VpicParser(data, size);
}
