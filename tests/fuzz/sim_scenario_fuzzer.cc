// libFuzzer target: fusebox-sim's scenario loader.
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fusebox::fuzz::SimScenario(data, size);
}
