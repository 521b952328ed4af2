// libFuzzer target: vpic-sim's fault JSON (control API body).
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fusebox::fuzz::VpicSimFaultJson(data, size);
}
