#include "fusebox/registry.h"

#include <algorithm>
#include <memory>
#include <utility>

namespace fusebox {

Result<std::unique_ptr<Registry>, ConfigError> Registry::Create(CircuitBreakerConfig defaults,
                                                                CircuitBreakerDeps deps) {
  if (auto error = defaults.Validate()) {
    return *error;
  }
  return std::make_unique<Registry>(defaults, deps);
}

Registry::Registry(CircuitBreakerConfig defaults, CircuitBreakerDeps deps)
    : defaults_(defaults), deps_(deps) {}

std::optional<ConfigError> Registry::Configure(const std::string& name,
                                               const CircuitBreakerConfig& config) {
  if (auto error = config.Validate()) {
    return error;
  }
  Locked lock(mu_);
  if (live_.contains(name)) {
    return ConfigError{"name", "breaker \"" + name + "\" already exists; configure it before use"};
  }
  configs_.insert_or_assign(name, config);
  return std::nullopt;
}

Result<std::shared_ptr<CircuitBreaker>, ConfigError> Registry::Get(const std::string& name) {
  {
    LockedShared lock(mu_);
    if (auto it = live_.find(name); it != live_.end()) {
      return it->second;
    }
  }
  Locked lock(mu_);
  if (auto it = live_.find(name); it != live_.end()) {
    return it->second;  // created by another thread meanwhile
  }
  auto config_it = configs_.find(name);
  const CircuitBreakerConfig& config = config_it != configs_.end() ? config_it->second : defaults_;
  auto created = CircuitBreaker::Create(name, config, deps_);
  if (!created) {
    return created.error();
  }
  std::shared_ptr<CircuitBreaker> breaker = std::move(created).value();
  live_.emplace(name, breaker);
  return breaker;
}

std::shared_ptr<CircuitBreaker> Registry::Find(const std::string& name) const {
  LockedShared lock(mu_);
  auto it = live_.find(name);
  return it != live_.end() ? it->second : nullptr;
}

std::vector<std::shared_ptr<CircuitBreaker>> Registry::All() const {
  LockedShared lock(mu_);
  std::vector<std::shared_ptr<CircuitBreaker>> out;
  out.reserve(live_.size());
  for (const auto& [name, breaker] : live_) {
    out.push_back(breaker);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return out;
}

}  // namespace fusebox
