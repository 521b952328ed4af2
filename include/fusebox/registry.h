// fusebox/registry.h
//
// One breaker per dependency, by name. A service talks to several dependencies with different
// failure characteristics (a flaky third-party API wants a lower threshold and a longer cooldown
// than an internal service), and a failing recommendations service must never gate payments, so
// each dependency gets its own breaker and its own config, with shared defaults.
//
// `Configure(name, config)` sets a dependency's config before first use (validated: a bad config
// is refused with the field and range). `Get(name)` returns the breaker, creating it on first use
// from its config or from the defaults. Breakers live as long as the registry or the last
// shared_ptr to them.
//
// Thread safety: all members may be called concurrently. Get() on an existing name takes a
// shared lock only; hold on to the shared_ptr instead of calling Get() per call.
//
// Scale: names are hashed, so Get() and Find() cost the same with one breaker or a million
// (docs/benchmarks.md measures 1, 1,000 and 100,000).
//
// Example:
//   auto registry = fusebox::Registry::Create({.failure_threshold = 5}).value();
//   registry->Configure("vpic", {.failure_threshold = 3, .cooldown = std::chrono::seconds(20)});
//   std::shared_ptr<fusebox::CircuitBreaker> vpic = registry->Get("vpic").value();
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/status.h"
#include "fusebox/thread_annotations.h"

namespace fusebox {

class Registry {
 public:
  // Validates `defaults` first: fails with the ConfigError (field and range) when they are
  // invalid, so a bad default is refused at startup rather than at the first Get().
  static Result<std::unique_ptr<Registry>, ConfigError> Create(CircuitBreakerConfig defaults = {},
                                                               CircuitBreakerDeps deps = {});
  // Refuses nothing here; an invalid `defaults` makes every Get() of an unconfigured name fail
  // (Create() checks them up front).
  explicit Registry(CircuitBreakerConfig defaults = {}, CircuitBreakerDeps deps = {});

  // Sets the config `name` is created with. Fails with the ConfigError when the config is
  // invalid, or with field "name" when the breaker already exists: a live breaker is changed
  // with its own CircuitBreaker::Reconfigure (Find(name)->Reconfigure(config)), which keeps its
  // state and counters.
  std::optional<ConfigError> Configure(const std::string& name, const CircuitBreakerConfig& config);

  // The breaker for `name`, created on first use. Fails only when its config is invalid.
  Result<std::shared_ptr<CircuitBreaker>, ConfigError> Get(const std::string& name);

  // The breaker for `name` if it exists, else null. Never creates.
  std::shared_ptr<CircuitBreaker> Find(const std::string& name) const;

  // The existing breakers, sorted by name.
  std::vector<std::shared_ptr<CircuitBreaker>> All() const;

  const CircuitBreakerConfig& defaults() const noexcept { return defaults_; }

 private:
  const CircuitBreakerConfig defaults_;
  const CircuitBreakerDeps deps_;
  mutable SharedMutex mu_;
  std::unordered_map<std::string, CircuitBreakerConfig> configs_ FUSEBOX_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::shared_ptr<CircuitBreaker>> live_ FUSEBOX_GUARDED_BY(mu_);
};

}  // namespace fusebox
