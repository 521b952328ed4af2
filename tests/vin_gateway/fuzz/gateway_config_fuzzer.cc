// libFuzzer target: the gateway's --config TOML file -> GatewayConfig or a typed error.
#include "vin_gateway/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fusebox::gateway::fuzz::GatewayConfigFile(data, size);
}
