// The bodies of the gateway's libFuzzer targets, shared by the fuzzers (clang, -fsanitize=fuzzer)
// and by a deterministic smoke test that runs them in every build. Each returns 0 and traps when
// an invariant breaks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vin_gateway::fuzz {

// NormalizeVin / ValidateVin on arbitrary bytes: never crashes; an accepted VIN is 17 VIN
// characters; problem positions are within the input; the answer renders as valid UTF-8 JSON.
int VinNormalizer(const std::uint8_t* data, std::size_t size);

// ParseVpic on arbitrary bytes: never crashes; every row has the required vehicle keys and only
// snake_case keys; values are trimmed.
int VpicParser(const std::uint8_t* data, std::size_t size);

}  // namespace vin_gateway::fuzz
