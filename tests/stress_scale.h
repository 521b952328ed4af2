// How much work the library's stress tests do. Their sources are compiled into two binaries:
// fusebox_stress_test (label `stress`, in the default run: one round of the base count, well
// under a second) and fusebox_stress_long_test (label `long`), compiled with
// FUSEBOX_STRESS_CALLS_PER_THREAD and FUSEBOX_STRESS_ROUNDS set: longer runs, so threads are
// preempted mid-run more often, repeated with fresh seeds for more interleavings.
// The environment variable FUSEBOX_STRESS_ROUNDS overrides the round count of either binary, for
// a soak run by hand.
#pragma once

#include <charconv>
#include <cstdlib>
#include <cstring>

#ifndef FUSEBOX_STRESS_CALLS_PER_THREAD
#define FUSEBOX_STRESS_CALLS_PER_THREAD 20000
#endif
#ifndef FUSEBOX_STRESS_ROUNDS
#define FUSEBOX_STRESS_ROUNDS 1
#endif

namespace fusebox::testing {

// Calls each thread of a stress run makes.
inline constexpr int kStressCallsPerThread = FUSEBOX_STRESS_CALLS_PER_THREAD;

// How many times each stress case runs: FUSEBOX_STRESS_ROUNDS from the environment when it is a
// positive number, otherwise the binary's compiled-in count.
inline int StressRounds() {
  int rounds = FUSEBOX_STRESS_ROUNDS;
  if (const char* env = std::getenv("FUSEBOX_STRESS_ROUNDS")) {
    int parsed = 0;
    const char* end = env + std::strlen(env);
    if (std::from_chars(env, end, parsed).ptr == end && parsed > 0) {
      rounds = parsed;
    }
  }
  return rounds;
}

}  // namespace fusebox::testing
