#include "fusebox/throttle.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "fusebox/thread_annotations.h"
#include "internal/spin_lock.h"

namespace fusebox {
namespace {

// The window is kept as this many buckets, each a tenth of it wide: a count leaves the window
// between 0.9 and 1 window after it was made, and the lock holds a few dozen instructions.
constexpr int kBuckets = 10;

std::uint64_t SeedFromName(const std::string& name) noexcept {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

std::string Millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// The formula, with the throttle's own refusals counted in the share the sent calls failed
// (none while none was sent: refusals alone say nothing of the dependency).
double Probability(std::uint64_t sent, std::uint64_t accepts, std::uint64_t refused,
                   double k) noexcept {
  const double s = static_cast<double>(sent);
  const double a = static_cast<double>(accepts);
  const double failed_share = sent == 0 ? 0.0 : 1.0 - a / s;
  const double requests = s + static_cast<double>(refused) * failed_share;
  return std::max(0.0, (requests - k * a) / (requests + 1.0));
}

}  // namespace

std::optional<ConfigError> ThrottleConfig::Validate() const {
  if (!(k >= 1.0 && k <= 100.0)) {
    return ConfigError{"k", "k must be in [1, 100], got " + std::to_string(k)};
  }
  if (window < std::chrono::milliseconds(100) || window > std::chrono::hours(1)) {
    return ConfigError{"window", "window must be in [100 ms, 1 h], got " + Millis(window)};
  }
  return std::nullopt;
}

// The window's buckets. Bucket i holds the counts of the bucket-wide slice numbered `epoch`
// (time since the clock's epoch / width) with epoch % kBuckets == i; a slice older than the
// newest kBuckets is stale and counts for nothing.
struct Throttle::Counts {
  struct Bucket {
    std::int64_t epoch = -1;
    std::uint64_t sent = 0;  // calls recorded as accepted or not
    std::uint64_t accepts = 0;
    std::uint64_t refused = 0;  // the throttle's own refusals
  };
  struct Sums {
    std::uint64_t sent = 0;
    std::uint64_t accepts = 0;
    std::uint64_t refused = 0;
  };
  using Kind = Throttle::CountKind;

  explicit Counts(Duration window) : width(std::max<Duration::rep>(1, window.count() / kBuckets)) {}

  // The slice `now` falls in.
  std::int64_t EpochOf(TimePoint now) const noexcept {
    return now.time_since_epoch().count() / width.count();
  }
  // The window's sums as of slice `epoch`.
  Sums SumsLocked(std::int64_t epoch) const FUSEBOX_REQUIRES(mu) {
    Sums sums;
    for (const Bucket& b : buckets) {
      if (b.epoch > epoch - kBuckets && b.epoch <= epoch) {
        sums.sent += b.sent;
        sums.accepts += b.accepts;
        sums.refused += b.refused;
      }
    }
    return sums;
  }
  void AddLocked(std::int64_t epoch, Kind kind) FUSEBOX_REQUIRES(mu) {
    Bucket& b = buckets[static_cast<std::size_t>(((epoch % kBuckets) + kBuckets) % kBuckets)];
    // A caller whose clock reading is older than the bucket's slice counts into the newer slice
    // rather than erasing it.
    if (b.epoch < epoch) {
      b = Bucket{.epoch = epoch, .sent = 0, .accepts = 0, .refused = 0};
    }
    if (kind == Kind::kRefused) {
      ++b.refused;
    } else {
      ++b.sent;
      b.accepts += kind == Kind::kAccepted ? 1 : 0;
    }
  }

  const Duration width;
  mutable internal::SpinLock mu;
  std::array<Bucket, kBuckets> buckets FUSEBOX_GUARDED_BY(mu){};
};

Throttle::Throttle(std::string name, Config config, ThrottleDeps deps)
    : name_(std::move(name)),
      config_(config),
      clock_(deps.clock != nullptr ? *deps.clock : DefaultClock()),
      own_random_(deps.random != nullptr ? nullptr
                                         : std::make_unique<SplitMix64Random>(SeedFromName(name_))),
      random_(deps.random != nullptr ? *deps.random : *own_random_),
      counts_(std::make_unique<Counts>(config.window)) {}

Throttle::~Throttle() = default;

Result<std::unique_ptr<Throttle>, ConfigError> Throttle::Create(std::string name, Config config,
                                                                ThrottleDeps deps) {
  if (auto error = config.Validate()) {
    return *std::move(error);
  }
  return std::unique_ptr<Throttle>(new Throttle(std::move(name), config, deps));
}

Result<ThrottleTicket> Throttle::TryAcquire() noexcept {
  const double p = refusal_probability();
  // No draw while nothing is shed: a healthy dependency costs no random number, and a seeded
  // sequence is consumed only by the decisions that matter.
  if (p > 0.0 && random_.Uniform01() < p) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    Count(CountKind::kRefused);
    return Error{ReasonCode::kThrottled, kRetryAfter};
  }
  admitted_.fetch_add(1, std::memory_order_relaxed);
  return ThrottleTicket(this);
}

double Throttle::refusal_probability() const noexcept {
  const std::int64_t epoch = counts_->EpochOf(clock_.Now());
  Counts::Sums sums;
  {
    Locked lock(counts_->mu);
    sums = counts_->SumsLocked(epoch);
  }
  return Probability(sums.sent, sums.accepts, sums.refused, config_.k);
}

ThrottleStats Throttle::Stats() const {
  ThrottleStats stats;
  const std::int64_t epoch = counts_->EpochOf(clock_.Now());
  Counts::Sums sums;
  {
    Locked lock(counts_->mu);
    sums = counts_->SumsLocked(epoch);
  }
  stats.sent = sums.sent;
  stats.accepts = sums.accepts;
  stats.refused_in_window = sums.refused;
  stats.refusal_probability = Probability(sums.sent, sums.accepts, sums.refused, config_.k);
  stats.admitted = admitted_.load(std::memory_order_relaxed);
  stats.refused = refused_.load(std::memory_order_relaxed);
  return stats;
}

void Throttle::Count(CountKind kind) noexcept {
  const std::int64_t epoch = counts_->EpochOf(clock_.Now());
  Locked lock(counts_->mu);
  counts_->AddLocked(epoch, kind);
}

ThrottleTicket& ThrottleTicket::operator=(ThrottleTicket&& other) noexcept {
  if (this != &other) {
    Record(Outcome::kIgnored);
    throttle_ = std::exchange(other.throttle_, nullptr);
  }
  return *this;
}

void ThrottleTicket::Record(Outcome outcome) noexcept {
  if (Throttle* throttle = std::exchange(throttle_, nullptr)) {
    if (outcome == Outcome::kSuccess) {
      throttle->Count(Throttle::CountKind::kAccepted);
    } else if (outcome != Outcome::kIgnored) {
      throttle->Count(Throttle::CountKind::kNotAccepted);
    }
  }
}

}  // namespace fusebox
