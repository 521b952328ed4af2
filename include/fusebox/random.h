// fusebox/random.h
//
// Randomness, injected like time. Jittered cooldowns and retry backoff draw from a `Random&`, so a
// test or the simulator can fix the sequence with a seed and get the same trace every run.
// fusebox never seeds a generator by itself from the time or the OS.
//
// `SplitMix64Random` is the provided generator: tiny, fast, statistically sound for jitter, and
// thread-safe (its state is one atomic counter), so one instance may serve many breakers and
// threads.
//
// Example:
//   fusebox::SplitMix64Random rng(42);
//   double u = rng.Uniform01();   // in [0, 1)
#pragma once

#include <atomic>
#include <cstdint>

namespace fusebox {

class Random {
 public:
  virtual ~Random() = default;
  // 64 uniformly distributed bits. Must be safe to call from several threads at once.
  virtual std::uint64_t Next() noexcept = 0;

  // Uniform in [0, 1), from the top 53 bits of Next().
  double Uniform01() noexcept { return static_cast<double>(Next() >> 11U) * 0x1.0p-53; }
};

class SplitMix64Random final : public Random {
 public:
  explicit SplitMix64Random(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t Next() noexcept override {
    std::uint64_t z =
        state_.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31U);
  }

 private:
  std::atomic<std::uint64_t> state_;
};

}  // namespace fusebox
