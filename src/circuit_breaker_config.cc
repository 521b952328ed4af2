// CircuitBreakerConfig::Validate: the valid range of every field, checked before a breaker is
// built (CircuitBreaker::Create refuses a config it rejects). Each error names the first field
// out of range, the range, and the value given, so a config file's author can fix it at once.
// The ranges are the contract's (docs/breaker-rules.md, "Configuration: defaults and ranges").
// DescribeChanges: the "field: old -> new" lines of a live reconfiguration's log.
#include "fusebox/circuit_breaker.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "fusebox/sliding_window.h"

namespace fusebox {
namespace {

std::string Number(double v) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%g", v);
  return buf.data();
}

std::optional<ConfigError> RangeError(const char* field, double value, const std::string& range) {
  return ConfigError{field, std::string(field) + " must be in " + range + ", got " + Number(value)};
}

std::string Seconds(Duration d) { return Number(ToSeconds(d)) + "s"; }

std::string Text(double v) { return Number(v); }
std::string Text(std::uint32_t v) { return std::to_string(v); }
std::string Text(bool v) { return v ? "true" : "false"; }
std::string Text(Duration v) { return Seconds(v); }
std::string Text(TripPolicy v) { return std::string(ToString(v)); }
template <typename T>
std::string Text(const std::optional<T>& v) {
  return v ? Text(*v) : std::string("default");
}

template <typename T>
void Compare(std::vector<std::string>& out, const char* field, const T& before, const T& after) {
  if (!(before == after)) {
    out.push_back(std::string(field) + ": " + Text(before) + " -> " + Text(after));
  }
}

}  // namespace

std::optional<ConfigError> CircuitBreakerConfig::Validate() const {
  constexpr Duration kDay = std::chrono::hours(24);
  if (failure_threshold < 1 || failure_threshold > 1'000'000) {
    return RangeError("failure_threshold", failure_threshold, "[1, 1000000]");
  }
  if (trip == TripPolicy::kTimeWindow && (window_size < 1 || window_size > 3600)) {
    return RangeError("window_size", window_size, "[1, 3600] (seconds, time_window)");
  }
  static_assert(1'000'000 <= CountWindow::kMaxSize);
  if (window_size < 1 || window_size > 1'000'000) {
    return RangeError("window_size", window_size, "[1, 1000000]");
  }
  if (minimum_calls < 1 || minimum_calls > 1'000'000) {
    return RangeError("minimum_calls", minimum_calls, "[1, 1000000]");
  }
  // A count window never holds more than window_size outcomes: a larger gate never opens.
  if (trip == TripPolicy::kCountWindow && minimum_calls > window_size) {
    return RangeError("minimum_calls", minimum_calls,
                      "[1, window_size (" + std::to_string(window_size) + ")] (count_window)");
  }
  if (!(failure_rate_threshold > 0.0 && failure_rate_threshold <= 1.0)) {
    return RangeError("failure_rate_threshold", failure_rate_threshold, "(0, 1]");
  }
  if (!(slow_call_rate_threshold > 0.0 && slow_call_rate_threshold <= 1.0)) {
    return RangeError("slow_call_rate_threshold", slow_call_rate_threshold, "(0, 1]");
  }
  if (call_timeout <= Duration::zero() || call_timeout > kDay) {
    return ConfigError{"call_timeout",
                       "call_timeout must be in (0s, 86400s], got " + Seconds(call_timeout)};
  }
  if (slow_call_duration &&
      (*slow_call_duration <= Duration::zero() || *slow_call_duration > kDay)) {
    return ConfigError{"slow_call_duration", "slow_call_duration must be in (0s, 86400s], got " +
                                                 Seconds(*slow_call_duration)};
  }
  if (cooldown <= Duration::zero() || cooldown > kDay) {
    return ConfigError{"cooldown", "cooldown must be in (0s, 86400s], got " + Seconds(cooldown)};
  }
  if (half_open_max_probes < 1 || half_open_max_probes > 10'000) {
    return RangeError("half_open_max_probes", half_open_max_probes, "[1, 10000]");
  }
  if (half_open_successes && (*half_open_successes < 1 || *half_open_successes > 10'000)) {
    return RangeError("half_open_successes", *half_open_successes, "[1, 10000]");
  }
  if (inflight_slow_accounting && trip == TripPolicy::kConsecutive) {
    return ConfigError{"inflight_slow_accounting",
                       "inflight_slow_accounting must be false with trip = consecutive (it "
                       "feeds the slow-call rate of count_window and time_window)"};
  }
  if (!(cooldown_multiplier >= 1.0 && cooldown_multiplier <= 100.0)) {
    return RangeError("cooldown_multiplier", cooldown_multiplier, "[1, 100]");
  }
  if (cooldown_max && (*cooldown_max < cooldown || *cooldown_max > kDay)) {
    return ConfigError{"cooldown_max", "cooldown_max must be in [cooldown (" + Seconds(cooldown) +
                                           "), 86400s], got " + Seconds(*cooldown_max)};
  }
  if (!(cooldown_jitter >= 0.0 && cooldown_jitter <= 1.0)) {
    return RangeError("cooldown_jitter", cooldown_jitter, "[0, 1]");
  }
  return std::nullopt;
}

std::vector<std::string> DescribeChanges(const CircuitBreakerConfig& before,
                                         const CircuitBreakerConfig& after) {
  std::vector<std::string> out;
  Compare(out, "trip", before.trip, after.trip);
  Compare(out, "failure_threshold", before.failure_threshold, after.failure_threshold);
  Compare(out, "window_size", before.window_size, after.window_size);
  Compare(out, "minimum_calls", before.minimum_calls, after.minimum_calls);
  Compare(out, "failure_rate_threshold", before.failure_rate_threshold,
          after.failure_rate_threshold);
  Compare(out, "slow_call_duration", before.slow_call_duration, after.slow_call_duration);
  Compare(out, "slow_call_rate_threshold", before.slow_call_rate_threshold,
          after.slow_call_rate_threshold);
  Compare(out, "call_timeout", before.call_timeout, after.call_timeout);
  Compare(out, "cooldown", before.cooldown, after.cooldown);
  Compare(out, "half_open_max_probes", before.half_open_max_probes, after.half_open_max_probes);
  Compare(out, "half_open_successes", before.half_open_successes, after.half_open_successes);
  Compare(out, "batch_may_probe", before.batch_may_probe, after.batch_may_probe);
  Compare(out, "inflight_slow_accounting", before.inflight_slow_accounting,
          after.inflight_slow_accounting);
  Compare(out, "cooldown_multiplier", before.cooldown_multiplier, after.cooldown_multiplier);
  Compare(out, "cooldown_max", before.cooldown_max, after.cooldown_max);
  Compare(out, "cooldown_jitter", before.cooldown_jitter, after.cooldown_jitter);
  return out;
}

}  // namespace fusebox
