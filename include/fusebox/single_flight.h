// fusebox/single_flight.h: concurrent callers for the same key share one execution.
//
// As Go's golang.org/x/sync/singleflight: the first caller for a key is the *leader* and runs the
// work; callers arriving meanwhile are *followers* and get its result. A flight ends when the
// leader publishes; the next caller starts a new one (this is not a cache). A follower may leave
// early (its own deadline or stop token) without cancelling the work; a leader destroyed without
// publishing gives its followers kLeaderAbandoned, never a hang. Synchronous waits (Do, Wait) block
// on a condition variable; asynchronous ones (Join, OnReady) call back. Where it goes among the
// other pieces: docs/composition.md ("Single-flight").
//
//   Join(key) --no flight for key--> Leader (run the work, then Publish(value) or Fail())
//             --flight in progress--> Follower (Wait(options) or OnReady(callback))
//
// Thread safety: every member of SingleFlight, Leader and Follower may be called concurrently (a
// Leader object is used by one thread at a time, like any movable value). Key is copyable and
// hashable; Value is copy-constructible (use a shared_ptr<const T> for big values). The
// SingleFlight must outlive its Leaders; Followers may outlive both.
//
// Example:
//   fusebox::SingleFlight<std::string, Decode> flights;
//   fusebox::Result<Decode, fusebox::FlightError> decode = flights.Do(
//       vin, [&] { return DecodeUpstream(vin); },
//       {.deadline = std::chrono::steady_clock::now() + budget, .stop_token = token});
//   if (!decode) return Reject(fusebox::ToReasonCode(decode.error()));
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "fusebox/status.h"
#include "fusebox/thread_annotations.h"

namespace fusebox {

// Why a single-flight waiter got no value.
enum class FlightError : std::uint8_t {
  kLeaderFailed,      // the leader's work threw, or the leader called Fail()
  kLeaderAbandoned,   // the leader was destroyed, or called Abandon(), without publishing
  kDeadlineExceeded,  // this waiter's deadline passed first (the flight goes on)
  kCancelled,         // this waiter's stop token was stopped (the flight goes on)
};

// "LEADER_FAILED", "LEADER_ABANDONED", "DEADLINE_EXCEEDED", "CANCELLED".
constexpr std::string_view ToString(FlightError error) noexcept {
  switch (error) {
    case FlightError::kLeaderFailed:
      return "LEADER_FAILED";
    case FlightError::kLeaderAbandoned:
      return "LEADER_ABANDONED";
    case FlightError::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case FlightError::kCancelled:
      return "CANCELLED";
  }
  return "UNKNOWN";
}

// The reason a caller should report: a failed or abandoned flight is an upstream error, a waiter
// out of budget is a slow upstream, a cancelled waiter is cancelled.
constexpr ReasonCode ToReasonCode(FlightError error) noexcept {
  switch (error) {
    case FlightError::kLeaderFailed:
    case FlightError::kLeaderAbandoned:
      return ReasonCode::kUpstreamError;
    case FlightError::kDeadlineExceeded:
      return ReasonCode::kUpstreamSlow;
    case FlightError::kCancelled:
      return ReasonCode::kCancelled;
  }
  return ReasonCode::kUpstreamError;
}

// How long one synchronous waiter is willing to wait. Both members are optional.
struct FlightWaitOptions {
  // Give up (kDeadlineExceeded) at this instant. A steady_clock time point because the condition
  // variable's timed wait needs a real clock: a wait primitive, never a time source for decisions
  // (fusebox reads no clock here). A guarded call's deadline converts with
  // CallContext::steady_deadline(). Default: no deadline.
  std::optional<std::chrono::steady_clock::time_point> deadline{};
  // Give up (kCancelled) when this is stopped. Default: no stop token.
  std::stop_token stop_token{};
};

template <typename Key, typename Value, typename Hash = std::hash<Key>,
          typename KeyEqual = std::equal_to<Key>>
class SingleFlight {
 public:
  using FlightResult = Result<Value, FlightError>;
  class Leader;
  class Follower;
  using Joined = std::variant<Leader, Follower>;

  SingleFlight() = default;
  SingleFlight(const SingleFlight&) = delete;
  SingleFlight& operator=(const SingleFlight&) = delete;
  ~SingleFlight() = default;

  // Joins the flight for `key`, or starts one. A Leader must run the work and Publish() (or
  // Fail()); a Follower waits for the leader's result. The asynchronous use:
  //   auto joined = flights.Join(vin);
  //   if (auto* leader = std::get_if<decltype(flights)::Leader>(&joined)) {
  //     leader->Publish(co_await DecodeUpstream(vin));
  //   } else {
  //     std::get<decltype(flights)::Follower>(joined).OnReady(
  //         [handler](const auto& result) mutable { post(std::move(handler), result); });
  //   }
  Joined Join(const Key& key);

  // The synchronous single-flight call. The leader runs `fn()` on this thread (it is the
  // execution, so it has no deadline of its own: the work's own budget bounds it) and publishes
  // its result; if fn throws, followers get kLeaderFailed and the exception propagates to the
  // leader's caller. A follower waits with its own `options`.
  template <typename Fn>
    requires std::is_constructible_v<Value, std::invoke_result_t<Fn&>>
  FlightResult Do(const Key& key, Fn&& fn, FlightWaitOptions options = {});

  // Flights started (leaders): executions of the work.
  std::uint64_t executed() const noexcept { return executed_.load(std::memory_order_relaxed); }
  // Callers that joined a flight in progress (followers): executions saved.
  std::uint64_t shared() const noexcept { return shared_.load(std::memory_order_relaxed); }
  // Keys with a flight in progress now.
  std::size_t in_flight() const {
    Locked lock(mu_);
    return flights_.size();
  }

 private:
  // Type-erased, move-only result callback (std::function would need a copyable callable, and
  // completion handlers are move-only).
  struct Callback {
    virtual ~Callback() = default;
    virtual void Run(const FlightResult& result) noexcept = 0;
  };
  template <typename F>
  struct CallbackOf final : Callback {
    explicit CallbackOf(F&& fn) : f(std::move(fn)) {}
    void Run(const FlightResult& result) noexcept override { f(result); }
    F f;
  };

  // The state one flight's leader and followers share.
  struct Flight {
    Mutex mu;
    std::condition_variable_any cv;
    // Set once, by the leader; immutable afterwards, so whoever saw it set under `mu` may read it
    // through a pointer taken then, without the lock.
    std::optional<FlightResult> result FUSEBOX_GUARDED_BY(mu);
    // Run once `result` is set, outside `mu`.
    std::vector<std::unique_ptr<Callback>> callbacks FUSEBOX_GUARDED_BY(mu);
  };

  // Drops `flight` from the map if it is still the flight of `key`.
  void Remove(const Key& key, const std::shared_ptr<Flight>& flight);

  mutable Mutex mu_;
  std::unordered_map<Key, std::shared_ptr<Flight>, Hash, KeyEqual> flights_ FUSEBOX_GUARDED_BY(mu_);
  // Statistics (relaxed).
  std::atomic<std::uint64_t> executed_{0};
  std::atomic<std::uint64_t> shared_{0};
};

// A waiter's handle on a flight. Copyable; every copy sees the same result.
template <typename Key, typename Value, typename Hash, typename KeyEqual>
class SingleFlight<Key, Value, Hash, KeyEqual>::Follower {
 public:
  // Blocks until the result is published, options.stop_token is stopped (kCancelled) or
  // options.deadline passes (kDeadlineExceeded). A published result wins over both. Leaving never
  // affects the flight. Returns at once when the flight is already over.
  FlightResult Wait(FlightWaitOptions options = {}) const {
    Flight& flight = *flight_;
    Locked lock(flight.mu);
    // The wait takes the mutex itself (condition_variable_any), so the analysis sees it held.
    auto ready = [&flight]() FUSEBOX_REQUIRES(flight.mu) { return flight.result.has_value(); };
    if (options.deadline) {
      flight.cv.wait_until(flight.mu, options.stop_token, *options.deadline, ready);
    } else {
      flight.cv.wait(flight.mu, options.stop_token, ready);
    }
    if (flight.result.has_value()) {
      return *flight.result;
    }
    if (options.stop_token.stop_requested()) {
      return FlightError::kCancelled;
    }
    return FlightError::kDeadlineExceeded;
  }

  // Runs `callback(const FlightResult&)` exactly once: now, on this thread, if the flight is
  // over; otherwise on the thread that publishes (or abandons), after every lock is released.
  // The callback must be quick and must not throw (std::terminate): post to an executor (an
  // Asio adapter posts to the waiting coroutine's executor and races its own timer; a callback
  // that comes after its waiter left is the adapter's to ignore).
  template <typename F>
    requires std::is_invocable_v<std::decay_t<F>&, const FlightResult&>
  void OnReady(F&& callback) const {
    auto boxed =
        std::make_unique<CallbackOf<std::decay_t<F>>>(std::decay_t<F>(std::forward<F>(callback)));
    const FlightResult* published = nullptr;
    {
      Locked lock(flight_->mu);
      if (!flight_->result.has_value()) {
        flight_->callbacks.push_back(std::move(boxed));
        return;
      }
      published = &*flight_->result;
    }
    boxed->Run(*published);
  }

  // Whether the flight is over (a result or an error is published).
  bool ready() const {
    Locked lock(flight_->mu);
    return flight_->result.has_value();
  }

 private:
  friend class SingleFlight;
  explicit Follower(std::shared_ptr<Flight> flight) : flight_(std::move(flight)) {}

  std::shared_ptr<Flight> flight_;  // never null
};

// The duty to run the work for a key and publish its result. Move-only. Destroying a Leader that
// has not published gives every follower kLeaderAbandoned, so no follower can hang on it.
template <typename Key, typename Value, typename Hash, typename KeyEqual>
class SingleFlight<Key, Value, Hash, KeyEqual>::Leader {
 public:
  Leader(Leader&& other) noexcept
      : group_(std::exchange(other.group_, nullptr)),
        flight_(std::move(other.flight_)),
        key_(std::move(other.key_)) {}
  Leader& operator=(Leader&& other) noexcept {
    if (this != &other) {
      Finish(FlightError::kLeaderAbandoned);
      group_ = std::exchange(other.group_, nullptr);
      flight_ = std::move(other.flight_);
      key_ = std::move(other.key_);
    }
    return *this;
  }
  Leader(const Leader&) = delete;
  Leader& operator=(const Leader&) = delete;
  ~Leader() { Finish(FlightError::kLeaderAbandoned); }

  // Gives `value` to every follower, present and future callers of OnReady/Wait on this flight,
  // and ends the flight (the next Join for the key starts a new one). Later calls do nothing.
  void Publish(Value value) { Finish(FlightResult(std::move(value))); }
  // Ends the flight with kLeaderFailed for every follower. Later calls do nothing.
  void Fail() { Finish(FlightError::kLeaderFailed); }
  // Ends the flight with kLeaderAbandoned, as destroying the Leader does: for a leader refused for
  // a reason that belongs to its own caller only (that client's rate limit), whose answer the
  // followers must not get. Followers with budget left may Join again; one of them then leads.
  void Abandon() { Finish(FlightError::kLeaderAbandoned); }

  // A follower handle on this flight, for a leader's caller that lets someone else run the work
  // and waits (with its own deadline) like the followers. Still valid after publishing (it then
  // holds the result). Precondition: not moved from.
  Follower follower() const { return Follower(flight_); }
  // Whether this Leader still has to publish.
  bool pending() const noexcept { return group_ != nullptr; }
  const Key& key() const noexcept { return key_; }

 private:
  friend class SingleFlight;
  Leader(SingleFlight* group, std::shared_ptr<Flight> flight, Key key)
      : group_(group), flight_(std::move(flight)), key_(std::move(key)) {}

  void Finish(FlightResult result) noexcept {
    if (group_ == nullptr) {
      return;
    }
    std::vector<std::unique_ptr<Callback>> callbacks;
    const FlightResult* published = nullptr;
    {
      Locked lock(flight_->mu);
      published = &flight_->result.emplace(std::move(result));
      callbacks.swap(flight_->callbacks);
    }
    // Set the result first, then leave the map: a caller joining in between gets the result at
    // once instead of starting a second execution.
    std::exchange(group_, nullptr)->Remove(key_, flight_);
    flight_->cv.notify_all();
    for (auto& callback : callbacks) {
      callback->Run(*published);
    }
  }

  SingleFlight* group_;             // null once published or moved from
  std::shared_ptr<Flight> flight_;  // kept after publishing, for follower()
  Key key_;
};

// ---- implementation ----

template <typename Key, typename Value, typename Hash, typename KeyEqual>
auto SingleFlight<Key, Value, Hash, KeyEqual>::Join(const Key& key) -> Joined {
  Locked lock(mu_);
  if (auto it = flights_.find(key); it != flights_.end()) {
    shared_.fetch_add(1, std::memory_order_relaxed);
    return Follower(it->second);
  }
  auto flight = std::make_shared<Flight>();
  flights_.emplace(key, flight);
  executed_.fetch_add(1, std::memory_order_relaxed);
  return Leader(this, std::move(flight), key);
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename Fn>
  requires std::is_constructible_v<Value, std::invoke_result_t<Fn&>>
auto SingleFlight<Key, Value, Hash, KeyEqual>::Do(const Key& key, Fn&& fn,
                                                  FlightWaitOptions options) -> FlightResult {
  Joined joined = Join(key);
  if (auto* leader = std::get_if<Leader>(&joined)) {
    std::optional<Value> value;
    try {
      value.emplace(std::invoke(fn));
    } catch (...) {
      leader->Fail();
      throw;
    }
    leader->Publish(*value);
    return std::move(*value);
  }
  return std::get<Follower>(joined).Wait(std::move(options));
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
void SingleFlight<Key, Value, Hash, KeyEqual>::Remove(const Key& key,
                                                      const std::shared_ptr<Flight>& flight) {
  Locked lock(mu_);
  auto it = flights_.find(key);
  if (it != flights_.end() && it->second == flight) {
    flights_.erase(it);
  }
}

}  // namespace fusebox
