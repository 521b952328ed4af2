// examples/shipping_recovery.cc
//
// The lesson's down-and-recover cycle, in virtual time: an orders service calls shipping once a
// second through a CircuitBreaker (failure_threshold = 5, cooldown = 10 s). Shipping answers in
// 20 ms, except from t = 10 s to t = 60 s, when it fails at once. The breaker opens at t = 14 s,
// probes every 10 s while shipping is still down (each failed probe restarts the cooldown), and
// closes on its own with the probe of t = 64 s, which succeeds at t = 64.02 s.
//
// The program prints the transitions from the breaker's transition events, the way the lesson
// does, then checks them and the counters; it returns non-zero if anything differs.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <variant>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/events.h"
#include "fusebox/status.h"
#include "fusebox/testing/manual_clock.h"

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr seconds kOutageFrom{10};
constexpr seconds kOutageTo{60};
constexpr milliseconds kHealthyLatency{20};
constexpr int kDurationS = 90;  // one call per second, t = 0 .. 89

// Shipping in virtual time: the mode at admission decides the call's fate (as in fusebox-sim).
class FakeShipping {
 public:
  explicit FakeShipping(fusebox::testing::ManualClock& clock) : clock_(clock) {}

  // Returns whether the shipment was booked.
  bool Book() {
    const fusebox::Duration now = clock_.Now().time_since_epoch();
    if (now >= kOutageFrom && now < kOutageTo) {
      return false;  // down: fails at once
    }
    clock_.Advance(kHealthyLatency);
    return true;
  }

 private:
  fusebox::testing::ManualClock& clock_;
};

struct Transition {
  std::uint64_t sequence = 0;
  fusebox::TransitionEvent event;
};

double Seconds(fusebox::Duration d) { return std::chrono::duration<double>(d).count(); }

// "14.0", "64.02": one decimal, more only when the instant needs it (microsecond precision).
std::string FormatSeconds(fusebox::TimePoint t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch());
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.6f", Seconds(us));
  std::string s(buf.data());
  const std::size_t dot = s.find('.');
  while (s.size() > dot + 2 && s.back() == '0') {
    s.pop_back();
  }
  return s;
}

struct Expected {
  milliseconds at;
  fusebox::State from;
  fusebox::State to;
  fusebox::TransitionCause cause;
};

class Checker {
 public:
  void Expect(bool ok, const std::string& what) {
    if (!ok) {
      ++failures_;
      std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    }
  }
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

}  // namespace

int main() {
  using fusebox::State;
  using fusebox::TransitionCause;

  fusebox::testing::ManualClock clock;
  FakeShipping shipping(clock);
  fusebox::CircuitBreakerConfig config;
  config.failure_threshold = 5;
  config.cooldown = seconds(10);
  auto created = fusebox::CircuitBreaker::Create("shipping", config, {.clock = &clock});
  if (!created) {
    std::fprintf(stderr, "bad config: %s\n", created.error().message.c_str());
    return 1;
  }
  fusebox::CircuitBreaker& breaker = **created;

  std::vector<Transition> transitions;
  breaker.AddListener([&](const fusebox::Event& event) {
    if (const auto* t = std::get_if<fusebox::TransitionEvent>(&event.detail)) {
      transitions.push_back({event.sequence, *t});
    }
  });

  Checker check;
  for (int k = 0; k < kDurationS; ++k) {
    clock.Set(fusebox::TimePoint(seconds(k)));
    auto booked =
        breaker.Call([&](const fusebox::CallContext& /*ctx*/) { return shipping.Book(); });
    if (k == 15) {
      // One second after the trip at t = 14: rejected at once, 9 s until a probe may run.
      check.Expect(!booked && booked.error().code == fusebox::ReasonCode::kCircuitOpen &&
                       booked.error().retry_after == seconds(9),
                   "t=15 is rejected with CIRCUIT_OPEN and retry_after 9 s");
    }
  }

  // Listeners may run on any thread in general; the sequence restores the order of the facts.
  std::sort(transitions.begin(), transitions.end(),
            [](const Transition& a, const Transition& b) { return a.sequence < b.sequence; });
  std::printf("--- transitions (t, from -> to) ---\n");
  for (const Transition& t : transitions) {
    std::printf("    t=%5ss%12s -> %-11s (%s)\n", FormatSeconds(t.event.at).c_str(),
                std::string(fusebox::ToString(t.event.from)).c_str(),
                std::string(fusebox::ToString(t.event.to)).c_str(),
                std::string(fusebox::ToString(t.event.cause)).c_str());
  }

  std::vector<Expected> expected = {
      {seconds(14), State::kClosed, State::kOpen, TransitionCause::kConsecutiveFailures}};
  for (const int probe_at_s : {24, 34, 44, 54}) {
    const milliseconds probe_at = seconds(probe_at_s);
    expected.push_back(
        {probe_at, State::kOpen, State::kHalfOpen, TransitionCause::kCooldownElapsed});
    expected.push_back({probe_at, State::kHalfOpen, State::kOpen, TransitionCause::kProbeFailed});
  }
  expected.push_back(
      {seconds(64), State::kOpen, State::kHalfOpen, TransitionCause::kCooldownElapsed});
  expected.push_back(
      {milliseconds(64'020), State::kHalfOpen, State::kClosed, TransitionCause::kProbesSucceeded});

  check.Expect(transitions.size() == expected.size(),
               "expected " + std::to_string(expected.size()) + " transitions, got " +
                   std::to_string(transitions.size()));
  for (std::size_t i = 0; i < transitions.size() && i < expected.size(); ++i) {
    const fusebox::TransitionEvent& got = transitions[i].event;
    const Expected& want = expected[i];
    const fusebox::TimePoint want_at(want.at);
    check.Expect(
        got.at == want_at && got.from == want.from && got.to == want.to && got.cause == want.cause,
        "transition " + std::to_string(i + 1) + " should be t=" + FormatSeconds(want_at) + " " +
            std::string(fusebox::ToString(want.from)) + " -> " +
            std::string(fusebox::ToString(want.to)) + " (" +
            std::string(fusebox::ToString(want.cause)) + ")");
  }

  // Closed 4.02 s after shipping came back (t = 60): the price of probing once per cooldown.
  if (!transitions.empty()) {
    const fusebox::TransitionEvent& last = transitions.back().event;
    const double recovery_delay_s = Seconds(last.at.time_since_epoch() - kOutageTo);
    std::printf("--- recovery delay: %.2f s after shipping came back\n", recovery_delay_s);
    check.Expect(last.to == State::kClosed, "the cycle ends CLOSED");
  }
  check.Expect(breaker.state() == State::kClosed, "the breaker is CLOSED at the end");

  const fusebox::MetricsSnapshot m = breaker.Snapshot();
  std::printf(
      "--- counters: calls=%llu allowed=%llu rejected_open=%llu succeeded=%llu failed=%llu "
      "probes=%llu wasted_probes=%llu\n",
      static_cast<unsigned long long>(m.calls), static_cast<unsigned long long>(m.allowed),
      static_cast<unsigned long long>(m.rejected_open),
      static_cast<unsigned long long>(m.succeeded), static_cast<unsigned long long>(m.failed),
      static_cast<unsigned long long>(m.probes), static_cast<unsigned long long>(m.wasted_probes));
  // 0..14 admitted (10 ok, 5 failures), 9 rejections per cooldown, 5 probes (4 wasted), then
  // 65..89 admitted: the lesson's numbers.
  check.Expect(m.calls == 90 && m.allowed == 45 && m.rejected_open == 45,
               "calls 90 = allowed 45 + rejected_open 45");
  check.Expect(m.succeeded == 36 && m.failed == 9, "succeeded 36, failed 9");
  check.Expect(m.probes == 5 && m.wasted_probes == 4, "5 probes, 4 wasted");

  if (check.failures() != 0) {
    std::fprintf(stderr, "shipping_recovery: %d check(s) failed\n", check.failures());
    return 1;
  }
  std::printf("shipping_recovery: OK\n");
  return 0;
}
