#include "fusebox/clock.h"

#include <time.h>  // NOLINT(modernize-deprecated-headers): clock_gettime is POSIX, not in <ctime>

#include <algorithm>
#include <condition_variable>
#include <thread>

#include "fusebox/thread_annotations.h"

namespace fusebox {
namespace {

TimePoint ReadClock(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return TimePoint(Duration(static_cast<Duration::rep>(ts.tv_sec) * 1'000'000'000 +
                            static_cast<Duration::rep>(ts.tv_nsec)));
}

constexpr Duration kMinTickerPeriod = std::chrono::microseconds(100);

}  // namespace

TimePoint PreciseMonotonicClock::Now() const noexcept { return ReadClock(CLOCK_MONOTONIC); }

Clock& DefaultClock() noexcept {
  // Never destroyed: breakers may outlive static destruction order.
  static auto* clock = new CoarseMonotonicClock();
  return *clock;
}

// ---- CachedClock ----

CachedClock::CachedClock(const Clock* source) noexcept
    : now_ns_((source != nullptr ? source->Now() : ReadClock(CLOCK_MONOTONIC))
                  .time_since_epoch()
                  .count()),
      source_(source),
      has_source_(true) {}

CachedClock::CachedClock(NoSource /*unused*/, TimePoint start) noexcept
    : now_ns_(start.time_since_epoch().count()), source_(nullptr), has_source_(false) {}

TimePoint CachedClock::Refresh() noexcept {
  if (has_source_) {
    PublishAtLeast(source_ != nullptr ? source_->Now() : ReadClock(CLOCK_MONOTONIC));
  }
  return Read();
}

bool CachedClock::PublishAtLeast(TimePoint t) noexcept {
  // A compare-and-swap loop rather than a plain store: two refreshers (a ticker and an event
  // loop) may race, and the one holding the earlier reading must not win, or Now() would go back.
  const Duration::rep target = t.time_since_epoch().count();
  Duration::rep current = now_ns_.load(std::memory_order_relaxed);
  while (current <= target) {
    if (now_ns_.compare_exchange_weak(current, target, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

void CachedClock::PublishAdvance(Duration d) noexcept {
  if (d.count() > 0) {
    now_ns_.fetch_add(d.count(), std::memory_order_acq_rel);
  }
}

// ---- ClockTicker ----

// The refreshing thread. It waits on a condition variable rather than sleeping so that the
// destructor can wake it at once instead of waiting out a period.
struct ClockTicker::Thread {
  Mutex mu;
  std::condition_variable_any cv;  // waits on `mu` itself, so the analysis sees it held
  bool stop FUSEBOX_GUARDED_BY(mu) = false;
  std::thread thread;
};

ClockTicker::ClockTicker(CachedClock& clock, Duration period)
    : period_(std::max(period, kMinTickerPeriod)), thread_(std::make_unique<Thread>()) {
  Thread& t = *thread_;
  clock.Refresh();
  t.thread = std::thread([&t, &clock, period = period_] {
    Locked lock(t.mu);
    while (!t.cv.wait_for(t.mu, period, [&t]() FUSEBOX_REQUIRES(t.mu) { return t.stop; })) {
      clock.Refresh();
    }
  });
}

ClockTicker::~ClockTicker() {
  {
    Locked lock(thread_->mu);
    thread_->stop = true;
  }
  thread_->cv.notify_one();
  thread_->thread.join();
}

}  // namespace fusebox
