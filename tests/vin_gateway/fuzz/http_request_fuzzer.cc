// libFuzzer target: one client connection's bytes -> the request parser -> the router's answers.
#include "vin_gateway/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fusebox::gateway::fuzz::HttpRequestPath(data, size);
}
