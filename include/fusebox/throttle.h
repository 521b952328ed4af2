// fusebox/throttle.h: client-side adaptive throttling, shedding just enough when the dependency
// starts refusing.
//
// The breaker is all or nothing: it lets every call through until the dependency is bad enough to
// trip it, then none. A dependency that refuses a share of its calls (over capacity, rate limited)
// is better served by sending a little less: the client-side throttling of Google's SRE book
// ("Handling Overload"), which Envoy's admission-control filter also implements. Over the last
// `window` the throttle counts the calls it was asked for (`requests`) and those the dependency
// accepted (`accepts`), and refuses a call locally with probability
//
//   p = max(0, (requests - k * accepts) / (requests + 1))
//
// So nothing is shed while more than 1/k of the calls succeed; once fewer do, nearly everything
// is, and a dependency that takes only so many calls gets about k times those. A refusal is
// ReasonCode::kThrottled with retry_after = 1 s.
//
// One departure from the book, so that the throttle opens again within `window` after the
// dependency recovers: `requests` is the calls sent plus the throttle's own refusals counted in
// the share of the sent calls that failed (all of them while none was sent). The book counts
// every refusal, and then a throttle that sends 1 call in 1,000 only doubles that share per
// window once every call succeeds again: about five windows to open. Counted here, a refusal
// stops counting once the calls sent succeed; the old counts age out of the window a tenth of it
// at a time, so p is 0 again at most `window` after the last failure.
//
//   TryAcquire: draw u; u < p ? count a refusal, kThrottled : ThrottleTicket
//   ticket.Record(kSuccess): a call sent and accepted; kFailure or kTimeout: sent, not accepted;
//   kIgnored (or the ticket destroyed unrecorded): nothing, so a call refused by the next piece
//   (the breaker, a full bulkhead) or failed by the caller's own trouble counts for nothing.
//
// Where it goes among the other pieces (docs/composition.md, "The order"): after the concurrency
// limit and the breaker, so the throttle counts only calls that would really have been sent and a
// probe is never shed. fusebox/admission.h composes them in that order.
//
// Thread safety: every member may be called concurrently; the counts sit behind a short lock.
// Time and randomness are injected (Clock, Random), so a test fixes both. With p = 0 no number
// is drawn. Lifetime: the Throttle must outlive its tickets, and the Random and Clock the Throttle.
//
// Example:
//   fusebox::SplitMix64Random rng(seed);
//   auto throttle = fusebox::Throttle::Create("vpic", {.k = 2.0}, {.random = &rng}).value();
//   fusebox::Result<fusebox::ThrottleTicket> ticket = throttle->TryAcquire();
//   if (!ticket) return Reject(ticket.error());  // kThrottled, retry_after = 1 s
//   Reply reply = CallShipping();
//   ticket->Record(reply.ok() ? fusebox::Outcome::kSuccess : fusebox::Outcome::kFailure);
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fusebox/clock.h"
#include "fusebox/outcome.h"
#include "fusebox/random.h"
#include "fusebox/status.h"

namespace fusebox {

struct ThrottleConfig {
  // The multiplier on accepts: nothing is shed while more than 1/k of the calls succeed. SRE's
  // book suggests 2; smaller sheds sooner (1.1 is aggressive). In [1, 100].
  double k = 2.0;
  // How far back the counts reach; they age out a tenth of it at a time. In [100 ms, 1 h].
  Duration window = std::chrono::seconds(30);

  // The first field outside its valid range, or nullopt when the config is valid.
  std::optional<ConfigError> Validate() const;
};

struct ThrottleDeps {
  Clock* clock = nullptr;    // null: the process's CoarseMonotonicClock
  Random* random = nullptr;  // null: a SplitMix64Random seeded from the name
};

class Throttle;

// The right to make one call. Move-only. Record the outcome the dependency gave.
class [[nodiscard]] ThrottleTicket {
 public:
  ThrottleTicket(ThrottleTicket&& other) noexcept : throttle_(other.throttle_) {
    other.throttle_ = nullptr;
  }
  ThrottleTicket& operator=(ThrottleTicket&& other) noexcept;
  ThrottleTicket(const ThrottleTicket&) = delete;
  ThrottleTicket& operator=(const ThrottleTicket&) = delete;
  ~ThrottleTicket() { Record(Outcome::kIgnored); }

  // kSuccess: an accepted request. kFailure, kTimeout: a request not accepted. kIgnored: nothing.
  // Later calls do nothing.
  void Record(Outcome outcome) noexcept;
  bool held() const noexcept { return throttle_ != nullptr; }

 private:
  friend class Throttle;
  explicit ThrottleTicket(Throttle* throttle) noexcept : throttle_(throttle) {}

  Throttle* throttle_;  // null once recorded or moved from
};

struct ThrottleStats {
  std::uint64_t sent = 0;               // in the window: calls recorded with an outcome
  std::uint64_t accepts = 0;            // in the window
  std::uint64_t refused_in_window = 0;  // in the window: the throttle's own refusals
  double refusal_probability = 0.0;
  std::uint64_t admitted = 0;  // since creation
  std::uint64_t refused = 0;   // since creation
};

class Throttle {
 public:
  using Config = ThrottleConfig;

  // The retry_after hint of a kThrottled refusal.
  static constexpr Duration kRetryAfter = std::chrono::seconds(1);

  // Refuses an invalid config with the ConfigError of Validate().
  static Result<std::unique_ptr<Throttle>, ConfigError> Create(std::string name, Config config,
                                                               ThrottleDeps deps = {});
  Throttle(const Throttle&) = delete;
  Throttle& operator=(const Throttle&) = delete;
  ~Throttle();

  // A ticket, or Error{kThrottled, kRetryAfter} with the refusal probability of the moment.
  // Never blocks.
  Result<ThrottleTicket> TryAcquire() noexcept;

  // p now, from the counts in the window.
  double refusal_probability() const noexcept;
  ThrottleStats Stats() const;
  const Config& config() const noexcept { return config_; }
  const std::string& name() const noexcept { return name_; }

 private:
  friend class ThrottleTicket;
  struct Counts;
  enum class CountKind : std::uint8_t { kAccepted, kNotAccepted, kRefused };
  Throttle(std::string name, Config config, ThrottleDeps deps);
  void Count(CountKind kind) noexcept;

  const std::string name_;
  const Config config_;
  Clock& clock_;
  std::unique_ptr<Random> own_random_;  // when none was injected
  Random& random_;
  std::atomic<std::uint64_t> admitted_{0};
  std::atomic<std::uint64_t> refused_{0};
  std::unique_ptr<Counts> counts_;  // the window's buckets, behind their lock
};

}  // namespace fusebox
