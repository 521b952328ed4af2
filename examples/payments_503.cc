// examples/payments_503.cc
//
// A checkout handler wraps its payment call in a CircuitBreaker. While the payment provider is
// down the breaker opens, and the handler answers at once with a 503 "Payment service
// unavailable, try again shortly" and a Retry-After taken from the rejection, instead of making
// every customer wait for a provider that is not answering.
//
// Time is virtual (a ManualClock): the fake gateway advances it by its latency, and the story
// advances it between requests. The program checks what it prints and returns non-zero if the
// breaker does not behave as described.
//
// Story: 3 good payments; the provider starts answering 503; 5 failures open the breaker; the
// next requests are refused without touching the provider (503 + Retry-After); the provider
// recovers; after the 30 s cooldown one probe goes through, succeeds, and the breaker closes.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/events.h"
#include "fusebox/outcome.h"
#include "fusebox/status.h"
#include "fusebox/testing/manual_clock.h"

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::string_view kUnavailable = "Payment service unavailable, try again shortly";

// What the payment provider answers.
struct GatewayReply {
  int status = 0;  // HTTP-like: 200 charged, 402 declined, 503 provider down
  std::string transaction_id;
};

// A payment provider stand-in: healthy or down, with a latency in virtual time.
class FakePaymentGateway {
 public:
  explicit FakePaymentGateway(fusebox::testing::ManualClock& clock) : clock_(clock) {}

  GatewayReply Charge(std::string_view order_id, std::int64_t amount_cents) {
    ++calls_;
    if (down_) {
      clock_.Advance(milliseconds(30));
      return {.status = 503, .transaction_id = {}};
    }
    clock_.Advance(milliseconds(120));
    if (amount_cents > 100'000) {
      return {.status = 402, .transaction_id = {}};  // declined: the provider works fine
    }
    return {.status = 200, .transaction_id = "txn-" + std::string(order_id)};
  }

  void set_down(bool down) { down_ = down; }
  int calls() const { return calls_; }

 private:
  fusebox::testing::ManualClock& clock_;
  bool down_ = false;
  int calls_ = 0;
};

// The answer the checkout endpoint gives its client.
struct HttpResponse {
  int status = 0;
  std::string body;
  std::optional<std::int64_t> retry_after_s;  // the Retry-After header, whole seconds
};

// Retry-After is whole seconds: round up, and never tell a client to retry in 0 s.
std::int64_t RetryAfterSeconds(fusebox::Duration d) {
  const std::int64_t s = std::chrono::ceil<seconds>(d).count();
  return s < 1 ? 1 : s;
}

// The breaker judges the provider, not the customer: a declined card (402) is an answer from a
// healthy provider, so it is a success for the breaker; a 5xx is a failure.
fusebox::Outcome Classify(const GatewayReply& reply) {
  return reply.status >= 500 ? fusebox::Outcome::kFailure : fusebox::Outcome::kSuccess;
}

HttpResponse Checkout(fusebox::CircuitBreaker& breaker, FakePaymentGateway& gateway,
                      const std::string& order_id, std::int64_t amount_cents) {
  auto result = breaker.Call(
      [&](const fusebox::CallContext& /*ctx*/) { return gateway.Charge(order_id, amount_cents); },
      Classify);
  if (result) {
    if (result->status == 402) {
      return {.status = 402, .body = "Card declined", .retry_after_s = std::nullopt};
    }
    return {
        .status = 200, .body = "Paid: " + result->transaction_id, .retry_after_s = std::nullopt};
  }
  const fusebox::Error& error = result.error();
  switch (error.code) {
    case fusebox::ReasonCode::kCircuitOpen:
    case fusebox::ReasonCode::kCircuitHalfOpen:
      // Fail fast: no work started, tell the client when a retry may succeed.
      return {.status = 503,
              .body = std::string(kUnavailable),
              .retry_after_s = RetryAfterSeconds(error.retry_after)};
    default:
      // The provider itself failed this call (the breaker counted it). Same answer to the
      // client; don't retry synchronously inside the same request.
      return {.status = 503, .body = std::string(kUnavailable), .retry_after_s = std::nullopt};
  }
}

class Checker {
 public:
  void Expect(bool ok, std::string_view what) {
    if (!ok) {
      ++failures_;
      std::fprintf(stderr, "FAIL: %.*s\n", static_cast<int>(what.size()), what.data());
    }
  }
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

double Seconds(fusebox::TimePoint t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

void Print(const fusebox::testing::ManualClock& clock, const std::string& order_id,
           const HttpResponse& r) {
  std::printf("t=%6.2fs  POST /checkout %-8s -> %d %s", Seconds(clock.Now()), order_id.c_str(),
              r.status, r.body.c_str());
  if (r.retry_after_s) {
    std::printf("  [Retry-After: %lld]", static_cast<long long>(*r.retry_after_s));
  }
  std::printf("\n");
}

}  // namespace

int main() {
  fusebox::testing::ManualClock clock;
  FakePaymentGateway gateway(clock);
  fusebox::CircuitBreakerConfig config;
  config.failure_threshold = 5;
  config.call_timeout = seconds(2);
  config.cooldown = seconds(30);
  auto created = fusebox::CircuitBreaker::Create("payments", config, {.clock = &clock});
  if (!created) {
    std::fprintf(stderr, "bad config: %s\n", created.error().message.c_str());
    return 1;
  }
  fusebox::CircuitBreaker& breaker = **created;

  // The listener runs inside Call() (after the breaker's lock is released); the story prints the
  // transitions after the response of the request that caused them.
  std::vector<fusebox::TransitionEvent> transitions;
  breaker.AddListener([&](const fusebox::Event& event) {
    if (const auto* t = std::get_if<fusebox::TransitionEvent>(&event.detail)) {
      transitions.push_back(*t);
    }
  });

  Checker check;
  int order = 0;
  std::size_t printed_transitions = 0;
  auto next_request = [&](std::int64_t amount_cents = 4'999) {
    clock.Advance(seconds(1));
    const std::string order_id = "ord-" + std::to_string(++order);
    HttpResponse r = Checkout(breaker, gateway, order_id, amount_cents);
    Print(clock, order_id, r);
    for (; printed_transitions < transitions.size(); ++printed_transitions) {
      const fusebox::TransitionEvent& t = transitions[printed_transitions];
      std::printf("          breaker: %s -> %s (%s)\n",
                  std::string(fusebox::ToString(t.from)).c_str(),
                  std::string(fusebox::ToString(t.to)).c_str(),
                  std::string(fusebox::ToString(t.cause)).c_str());
    }
    return r;
  };

  std::printf("--- provider healthy ---\n");
  for (int i = 0; i < 3; ++i) {
    check.Expect(next_request().status == 200, "healthy payment is 200");
  }
  check.Expect(next_request(250'000).status == 402, "declined card is 402, not a 503");
  check.Expect(breaker.state() == fusebox::State::kClosed, "closed while healthy");

  std::printf("--- provider starts answering 503 ---\n");
  gateway.set_down(true);
  for (int i = 0; i < 5; ++i) {
    const HttpResponse r = next_request();
    check.Expect(r.status == 503 && r.body == kUnavailable && !r.retry_after_s,
                 "provider failure is a 503 without Retry-After");
  }
  check.Expect(breaker.state() == fusebox::State::kOpen, "5 failures in a row open the breaker");

  std::printf("--- breaker open: fail fast, no provider calls ---\n");
  const int calls_when_opened = gateway.calls();
  const HttpResponse first_rejected = next_request();
  check.Expect(first_rejected.status == 503 && first_rejected.body == kUnavailable,
               "open breaker answers 503 try again shortly");
  // Opened at the end of the 5th failure; one second later 29 s of the 30 s cooldown remain.
  check.Expect(first_rejected.retry_after_s == 29, "Retry-After is the cooldown left (29 s)");
  for (int i = 0; i < 4; ++i) {
    check.Expect(next_request().retry_after_s.has_value(), "rejections carry Retry-After");
  }
  check.Expect(gateway.calls() == calls_when_opened, "no provider call while open");

  std::printf("--- provider recovers; wait for the cooldown ---\n");
  gateway.set_down(false);
  clock.Advance(seconds(24));  // the cooldown ends 30 s after the trip
  const HttpResponse probe = next_request();
  check.Expect(probe.status == 200, "the first call after the cooldown probes and succeeds");
  check.Expect(breaker.state() == fusebox::State::kClosed, "a good probe closes the breaker");
  check.Expect(next_request().status == 200, "traffic flows again");

  const fusebox::MetricsSnapshot m = breaker.Snapshot();
  std::printf("--- counters: calls=%llu allowed=%llu rejected_open=%llu failed=%llu probes=%llu\n",
              static_cast<unsigned long long>(m.calls), static_cast<unsigned long long>(m.allowed),
              static_cast<unsigned long long>(m.rejected_open),
              static_cast<unsigned long long>(m.failed), static_cast<unsigned long long>(m.probes));
  check.Expect(m.calls == 16 && m.allowed == 11 && m.rejected_open == 5, "call counters");
  check.Expect(m.failed == 5 && m.probes == 1, "outcome counters");

  const std::vector<std::pair<fusebox::State, fusebox::State>> expected = {
      {fusebox::State::kClosed, fusebox::State::kOpen},
      {fusebox::State::kOpen, fusebox::State::kHalfOpen},
      {fusebox::State::kHalfOpen, fusebox::State::kClosed},
  };
  check.Expect(transitions.size() == expected.size(), "three transitions");
  for (std::size_t i = 0; i < transitions.size() && i < expected.size(); ++i) {
    check.Expect(
        transitions[i].from == expected[i].first && transitions[i].to == expected[i].second,
        "transition order CLOSED->OPEN->HALF_OPEN->CLOSED");
  }

  if (check.failures() != 0) {
    std::fprintf(stderr, "payments_503: %d check(s) failed\n", check.failures());
    return 1;
  }
  std::printf("payments_503: OK\n");
  return 0;
}
