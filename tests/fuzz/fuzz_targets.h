// The bodies of the libFuzzer targets for fusebox-sim's and vpic-sim's file and body readers,
// shared by the fuzzers (clang, -fsanitize=fuzzer; tests/fuzz/CMakeLists.txt) and by
// fuzz_smoke_test, which runs them on the seeds under tests/fuzz/seeds/ in every build. Each
// returns 0 and traps (fuzz_support.h) when an invariant breaks. Every input is TOML or JSON text
// named "fuzz.toml" in messages.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fusebox::fuzz {

// fusebox-sim's LoadScenarioString: either a scenario file whose base and variants hold the
// loader's ranges (a valid breaker config, duration in (0, 1e9 s], rates in range, at most 1e9
// expected calls, phases sorted and apart) and rebuild with BuildScenario; or a LoadError located
// in the text (file "fuzz.toml", line within the text) with a message. When vpic-sim's
// ParseSchedule also accepts the text, it reads the same phases (from, to, mode) and latency: the
// two tools share the [upstream] grammar.
int SimScenario(const std::uint8_t* data, std::size_t size);

// vpic-sim's ParseFaultJson (the control API's POST /__control/faults body): either a FaultSpec
// that Validate()s and survives FaultSpecToJson -> ParseFaultJson unchanged; or a ConfigError
// with a message (its field is the key as the body spells it, possibly empty).
int VpicSimFaultJson(const std::uint8_t* data, std::size_t size);

// vpic-sim's ParseSchedule (--schedule FILE): either phases sorted by `from`, each [from, to)
// non-empty and apart from the next, each fault valid, PhaseAt() finding each phase at both ends;
// or a ConfigError whose message is located in "fuzz.toml".
int VpicSimSchedule(const std::uint8_t* data, std::size_t size);

}  // namespace fusebox::fuzz
