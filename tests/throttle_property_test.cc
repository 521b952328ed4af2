// Properties of Throttle under random sequences of calls, outcomes and time, with random k and
// windows: its refusal probability is the formula over a model's counts of the last window, it
// never refuses while at least 1/k of the calls sent in the window were accepted and no refusal
// counts, and it refuses exactly when the draw falls under that probability.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>

#include "fusebox/random.h"
#include "fusebox/testing/manual_clock.h"
#include "fusebox/throttle.h"

namespace {

using fusebox::Duration;
using fusebox::Outcome;
using fusebox::Throttle;
using fusebox::TimePoint;
using std::chrono::milliseconds;

// Draws from a sequence the property chooses.
class ScriptedRandom final : public fusebox::Random {
 public:
  std::uint64_t Next() noexcept override { return next; }
  std::uint64_t next = 0;
};

// What the model remembers of one count: when, and which kind.
struct Event {
  TimePoint at;
  int kind;  // 0 accepted, 1 sent and not accepted, 2 refused
};

RC_GTEST_PROP(ThrottleProperty, ProbabilityIsTheFormulaOverTheWindow, ()) {
  const double k = *rc::gen::element(1.0, 1.5, 2.0, 3.0);
  // Windows in whole buckets of whole milliseconds, so the model's bucket edges are exact.
  const Duration window = milliseconds(100 * *rc::gen::inRange(1, 50));
  const Duration bucket = window / 10;
  fusebox::testing::ManualClock clock{TimePoint(std::chrono::seconds(100))};
  ScriptedRandom random;
  auto throttle =
      Throttle::Create("prop", {.k = k, .window = window}, {.clock = &clock, .random = &random})
          .value();
  std::deque<Event> events;
  const int steps = *rc::gen::inRange(1, 600);
  for (int step = 0; step < steps; ++step) {
    const int action = *rc::gen::inRange(0, 10);
    if (action == 0) {
      clock.Advance(
          milliseconds(*rc::gen::inRange(0, 2 * static_cast<int>(window.count() / 1'000'000))));
      continue;
    }
    // The model: the counts whose bucket is among the newest ten.
    const auto bucket_of = [&](TimePoint t) { return t.time_since_epoch() / bucket; };
    const auto now_bucket = bucket_of(clock.Now());
    while (!events.empty() && bucket_of(events.front().at) <= now_bucket - 10) {
      events.pop_front();
    }
    double sent = 0;
    double accepts = 0;
    double refused = 0;
    for (const Event& e : events) {
      sent += e.kind != 2 ? 1 : 0;
      accepts += e.kind == 0 ? 1 : 0;
      refused += e.kind == 2 ? 1 : 0;
    }
    const double share = sent == 0 ? 0.0 : 1.0 - accepts / sent;
    const double requests = sent + refused * share;
    const double expected = std::max(0.0, (requests - k * accepts) / (requests + 1));
    const double p = throttle->refusal_probability();
    RC_ASSERT(std::abs(p - expected) < 1e-9);
    RC_ASSERT(p < 1.0);
    if (accepts * k >= sent && refused == 0) {
      RC_ASSERT(p == 0.0);
    }

    random.next = *rc::gen::arbitrary<std::uint64_t>();
    const double u = static_cast<double>(random.next >> 11U) * 0x1.0p-53;
    auto ticket = throttle->TryAcquire();
    RC_ASSERT(ticket.has_value() == !(p > 0.0 && u < p));
    if (!ticket) {
      events.push_back({clock.Now(), 2});
      continue;
    }
    const int outcome = *rc::gen::inRange(0, 4);
    if (outcome == 3) {
      ticket->Record(Outcome::kIgnored);
    } else {
      ticket->Record(outcome == 0 ? Outcome::kSuccess
                                  : (outcome == 1 ? Outcome::kFailure : Outcome::kTimeout));
      events.push_back({clock.Now(), outcome == 0 ? 0 : 1});
    }
  }
}

}  // namespace
