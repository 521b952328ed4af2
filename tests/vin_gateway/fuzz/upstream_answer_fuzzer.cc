// libFuzzer target: the bytes an upstream sends -> the HTTP vPIC client's answer reader.
#include "vin_gateway/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fusebox::gateway::fuzz::UpstreamAnswerRead(data, size);
}
