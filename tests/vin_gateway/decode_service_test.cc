// The decode path against a fake upstream: order of work, classification, breaker, budget,
// cache and stale serving, single-flight, bulkhead, rate limit, batch, and 429 handling.
// Budgets are Asio timers (real time), so they are short; the breaker, the rate limiter and the
// cache TTL run on manual clocks.
#include "service/decode_service.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include "core/answer_json.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"
#include "service/cache.h"
#include "service/gateway_metrics.h"
#include "service/hot_decodes.h"
#include "service/rate_limiter.h"
#include "service/transition_log.h"
#include "service/upstream_limits.h"
#include "vin_gateway/fake_vpic_client.h"
#include "vin_gateway/manual_wall_clock.h"

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using fusebox::gateway::DecodeAnswer;
using fusebox::gateway::DecodeStatus;
using fusebox::gateway::Source;
using fusebox::gateway::testing::FakeVpicClient;
using Mode = FakeVpicClient::Mode;

constexpr char kVin[] = "1FTMW1T88MFA00001";
// Valid VINs (tests/data/vin-vectors.tsv), distinct from kVin.
const std::vector<std::string> kOthers = {
    "137ZA903X1E412677", "19XFC1F7XGE028370", "1C4RJEAG2EC476429", "1D7RB1CP8BS798034",
    "1D7RB1CT1BS488952", "1GB0C4EGXGZ280783", "1GNKRHKD2GJ223195", "1N4BL3AP5DN508203",
    "19UUA65694A043249", "19XFB4F24DE547421", "1FAHP3FN8AW139719", "1GKEV13728J123735",
    "1GT020CG4EF828544", "1GYFC56299R410242", "1YVHZ8DH0C5M33844", "1ZVBP8CF4E5242560",
    "19VDE2E5XEE644230", "2A4GM684X6R632476", "2B3KA43G27H825762", "2C3CDYAGXDH825982"};

struct Options {
  fusebox::Duration call_timeout = 2s;
  fusebox::Duration cooldown = 20s;
  std::uint32_t failure_threshold = 3;
  std::uint32_t max_in_flight = 16;
  bool adaptive = false;  // an adaptive cap in [1, max_in_flight] instead of a fixed one
  double throttle_k = 0;  // 0: no throttle; its window is 10 s
  double rate = 0;
  double burst = 40;
  std::unique_ptr<fusebox::gateway::Cache> cache = nullptr;
  std::size_t hot_entries = 4096;
  fusebox::Duration answer_deadline = fusebox::Duration::zero();
  std::function<void(const fusebox::gateway::LateCall&)> on_late_call = nullptr;
};

class Harness {
 public:
  explicit Harness(Options options = {}) {
    fusebox::CircuitBreakerConfig config;
    config.failure_threshold = options.failure_threshold;
    config.call_timeout = options.call_timeout;
    config.cooldown = options.cooldown;
    config.half_open_successes = 1;
    breaker = std::move(fusebox::CircuitBreaker::Create("vpic", config, {.clock = &clock}).value());
    limits = std::move(
        fusebox::gateway::UpstreamLimits::Create(
            {.fixed = options.adaptive ? std::nullopt : std::optional(options.max_in_flight),
             .min = 1,
             .max = options.max_in_flight,
             .throttle_k = options.throttle_k,
             .throttle_window = 10s},
            clock)
            .value());
    cache = options.cache ? std::move(options.cache) : fusebox::gateway::MakeMemoryCache(1000);
    limiter = std::make_unique<fusebox::gateway::RateLimiter>(options.rate, options.burst, clock);
    service = std::make_unique<fusebox::gateway::DecodeService>(
        fusebox::gateway::DecodeServiceDeps{*cache, client, *breaker, *limits, *limiter, clock,
                                            wall, metrics, nullptr, nullptr, nullptr,
                                            std::move(options.on_late_call)},
        fusebox::gateway::DecodeServiceOptions{.cache_ttl = 24h,
                                               .hot_entries = options.hot_entries,
                                               .answer_deadline = options.answer_deadline});
  }

  // Starts a decode; its answer lands in the returned slot once the io_context runs it.
  std::shared_ptr<std::optional<DecodeAnswer>> Start(std::string vin, int year = 0,
                                                     std::string client_address = "10.0.0.1") {
    auto slot = std::make_shared<std::optional<DecodeAnswer>>();
    net::co_spawn(io, service->Decode(std::move(vin), year, std::move(client_address)),
                  [slot](std::exception_ptr error, DecodeAnswer answer) {
                    if (!error) {
                      *slot = std::move(answer);
                    }
                  });
    return slot;
  }

  DecodeAnswer Decode(std::string vin, int year = 0, std::string client_address = "10.0.0.1") {
    auto slot = Start(std::move(vin), year, std::move(client_address));
    io.restart();
    io.run();
    EXPECT_TRUE(slot->has_value());
    return slot->value_or(DecodeAnswer{});
  }

  std::vector<DecodeAnswer> Batch(std::vector<std::string> vins, int year = 0,
                                  std::string client_address = "10.0.0.1") {
    std::vector<DecodeAnswer> out;
    net::co_spawn(io, service->DecodeBatch(std::move(vins), year, std::move(client_address)),
                  [&out](std::exception_ptr error, std::vector<DecodeAnswer> answers) {
                    if (!error) {
                      out = std::move(answers);
                    }
                  });
    io.restart();
    io.run();
    return out;
  }

  // Runs ready work without waiting for timers (requests pile up on held calls).
  void Poll() {
    io.restart();
    io.poll();
  }

  void Trip() {
    client.mode = Mode::kStatus;
    client.status = 503;
    for (std::uint32_t i = 0; i < breaker->config().failure_threshold; ++i) {
      Decode(kOthers.at(i));
    }
    ASSERT_EQ(breaker->state(), fusebox::State::kOpen);
  }

  fusebox::testing::ManualClock clock;
  fusebox::gateway::testing::ManualWallClock wall;
  FakeVpicClient client;
  std::unique_ptr<fusebox::CircuitBreaker> breaker;
  std::unique_ptr<fusebox::gateway::UpstreamLimits> limits;
  std::unique_ptr<fusebox::gateway::Cache> cache;
  std::unique_ptr<fusebox::gateway::RateLimiter> limiter;
  fusebox::gateway::GatewayMetrics metrics;
  net::io_context io;
  std::unique_ptr<fusebox::gateway::DecodeService> service;  // last: uses everything above
};

TEST(DecodeServiceTest, InvalidVinNeverReachesUpstreamOrBreaker) {
  Harness h;
  const DecodeAnswer answer = h.Decode("1FTMW1T88MFA0000O");
  EXPECT_EQ(answer.status, DecodeStatus::kVinInvalid);
  EXPECT_EQ(answer.http_status(), 422U);
  ASSERT_EQ(answer.problems.size(), 1U);
  EXPECT_EQ(answer.problems[0].position, 17);
  EXPECT_EQ(h.client.calls, 0);
  EXPECT_EQ(h.breaker->Snapshot().calls, 0U);
}

TEST(DecodeServiceTest, LiveDecodeIsServedAndCached) {
  Harness h;
  const DecodeAnswer answer = h.Decode(" 1ftmw1t88-mfa00001 ");
  EXPECT_EQ(answer.status, DecodeStatus::kOk);
  EXPECT_EQ(answer.source, Source::kLive);
  EXPECT_EQ(answer.vin, kVin);
  ASSERT_TRUE(answer.decode);
  EXPECT_EQ(answer.decode->vehicle.at("make"), "FORD");
  EXPECT_EQ(answer.decode->vehicle.at("vehicle_type"), "TRUCK");
  EXPECT_EQ(answer.decode->upstream_codes, std::vector<int>{0});
  EXPECT_EQ(answer.check_digit, fusebox::gateway::CheckDigit::kValid);
  EXPECT_EQ(h.cache->Stats().entries, 1U);
}

TEST(DecodeServiceTest, FreshCacheHitMakesNoUpstreamCall) {
  Harness h;
  h.Decode(kVin);
  const DecodeAnswer again = h.Decode(kVin);
  EXPECT_EQ(again.status, DecodeStatus::kOk);
  EXPECT_EQ(again.source, Source::kCache);
  EXPECT_FALSE(again.stale);
  EXPECT_EQ(h.client.calls, 1);
}

TEST(DecodeServiceTest, EntryOlderThanTtlIsDecodedLiveAgain) {
  Harness h;
  h.Decode(kVin);
  h.wall.Advance(25h);
  const DecodeAnswer again = h.Decode(kVin);
  EXPECT_EQ(again.source, Source::kLive);
  EXPECT_EQ(h.client.calls, 2);
}

// Begin does what never waits and says whether that answered; Decode(step, ...) goes on from
// where it stopped, with the front's stale copy carried along (no second look at the front).
TEST(DecodeServiceTest, BeginAnswersWhatNeedsNoWaitingAndDecodeGoesOnFromTheStep) {
  Harness h;
  const auto go_on = [&h](fusebox::gateway::DecodeService::Step step) {
    std::optional<DecodeAnswer> out;
    net::co_spawn(h.io, h.service->Decode(std::move(step), "10.0.0.1"),
                  [&out](std::exception_ptr error, DecodeAnswer answer) {
                    if (!error) {
                      out = std::move(answer);
                    }
                  });
    h.io.restart();
    h.io.run();
    EXPECT_TRUE(out.has_value());
    return out.value_or(DecodeAnswer{});
  };
  fusebox::gateway::DecodeService::Step first = h.service->Begin(kVin, 0);
  EXPECT_FALSE(first.done);  // nothing stored yet
  EXPECT_EQ(first.front_copy, nullptr);
  EXPECT_EQ(h.metrics.fresh_hits(), 0U);
  EXPECT_EQ(go_on(std::move(first)).source, Source::kLive);

  const fusebox::gateway::DecodeService::Step hit = h.service->Begin(kVin, 0);
  ASSERT_TRUE(hit.done);
  EXPECT_EQ(hit.answer.source, Source::kCache);
  ASSERT_NE(hit.answer.rendered_body, nullptr);
  EXPECT_EQ(*hit.answer.rendered_body, fusebox::gateway::AnswerBody(hit.answer));
  EXPECT_EQ(h.metrics.fresh_hits(), 1U);

  const fusebox::gateway::DecodeService::Step invalid = h.service->Begin("1FTMW1T88MFA0000O", 0);
  ASSERT_TRUE(invalid.done);
  EXPECT_EQ(invalid.answer.status, DecodeStatus::kVinInvalid);

  h.wall.Advance(25h);  // the front's copy is past the TTL: kept, not fresh
  fusebox::gateway::DecodeService::Step old = h.service->Begin(kVin, 0);
  EXPECT_FALSE(old.done);
  ASSERT_NE(old.front_copy, nullptr);
  h.client.mode = Mode::kStatus;
  h.client.status = 503;
  const DecodeAnswer stale = go_on(std::move(old));
  EXPECT_EQ(stale.status, DecodeStatus::kUpstreamError);
  EXPECT_TRUE(stale.stale);
  EXPECT_EQ(h.client.calls, 2);
  EXPECT_EQ(h.metrics.fresh_hits(), 1U);
}

TEST(DecodeServiceTest, ModelYearIsPartOfTheCacheKey) {
  Harness h;
  h.Decode(kVin);
  const DecodeAnswer with_year = h.Decode(kVin, 2021);
  EXPECT_EQ(with_year.source, Source::kLive);
  EXPECT_EQ(h.client.calls, 2);
}

TEST(DecodeServiceTest, CheckDigitMismatchStillDecodes) {
  Harness h;
  const DecodeAnswer answer = h.Decode("WBA3A5C51CF256987");
  EXPECT_EQ(answer.status, DecodeStatus::kOk);
  EXPECT_EQ(answer.check_digit, fusebox::gateway::CheckDigit::kMismatch);
  EXPECT_EQ(h.client.calls, 1);
}

TEST(DecodeServiceTest, SparseAnswerIsASuccess) {
  Harness h;
  h.client.mode = Mode::kSparse;
  const DecodeAnswer answer = h.Decode(kVin);
  EXPECT_EQ(answer.status, DecodeStatus::kOk);
  EXPECT_EQ(answer.decode->upstream_codes, std::vector<int>{6});
  EXPECT_EQ(h.breaker->Snapshot().succeeded, 1U);
}

TEST(DecodeServiceTest, ServerErrorIsUpstreamErrorNeverInvalid) {
  Harness h;
  h.client.mode = Mode::kStatus;
  h.client.status = 500;
  const DecodeAnswer answer = h.Decode(kVin);
  EXPECT_EQ(answer.status, DecodeStatus::kUpstreamError);
  EXPECT_EQ(answer.http_status(), 502U);
  EXPECT_TRUE(answer.problems.empty());
  EXPECT_EQ(h.breaker->Snapshot().failed, 1U);
}

TEST(DecodeServiceTest, BodyThatIsNotVpicJsonIsAFailure) {
  Harness h;
  h.client.mode = Mode::kGarbage;
  EXPECT_EQ(h.Decode(kVin).status, DecodeStatus::kUpstreamError);
  EXPECT_EQ(h.breaker->Snapshot().failed, 1U);
  EXPECT_EQ(h.metrics.upstream_calls(fusebox::gateway::UpstreamResult::kBadBody), 1U);
}

TEST(DecodeServiceTest, ResetIsAFailure) {
  Harness h;
  h.client.mode = Mode::kReset;
  EXPECT_EQ(h.Decode(kVin).status, DecodeStatus::kUpstreamError);
  EXPECT_EQ(h.metrics.upstream_calls(fusebox::gateway::UpstreamResult::kTransport), 1U);
}

TEST(DecodeServiceTest, ATripOfTheInstancesOwnNetworkIsKnownAsSuchWhenItHappens) {
  Harness h;
  // What the fleet asks at the moment of the trip (FleetOptions::local_trouble runs then).
  std::vector<bool> own_network_at_trip;
  h.breaker->AddListener([&](const fusebox::Event& e) {
    if (const auto* t = std::get_if<fusebox::TransitionEvent>(&e.detail);
        t != nullptr && t->to == fusebox::State::kOpen) {
      own_network_at_trip.push_back(h.service->recent_failures_own_network());
    }
  });
  EXPECT_FALSE(h.service->recent_failures_own_network());  // no failure yet
  fusebox::gateway::UpstreamReply unresolved;
  unresolved.transport = fusebox::gateway::UpstreamReply::Transport::kConnect;
  unresolved.own_network = true;
  unresolved.detail = "resolve vpic.nhtsa.dot.gov: Host not found";
  h.client.scripted = unresolved;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(h.Decode(kOthers.at(i)).status, DecodeStatus::kUpstreamError);
  }
  ASSERT_EQ(h.breaker->state(), fusebox::State::kOpen);
  EXPECT_EQ(own_network_at_trip, std::vector<bool>{true});
  // vPIC's own failures outvote them: five 503s after the three leave 3 of the last 8.
  h.client.scripted.reset();
  h.breaker->Reset();
  h.client.mode = Mode::kStatus;
  for (std::size_t i = 0; i < 5; ++i) {
    (void)h.Decode(kOthers.at(i));
    h.breaker->Reset();
  }
  EXPECT_FALSE(h.service->recent_failures_own_network());
}

TEST(DecodeServiceTest, AnswerForAnotherVinIsAFailureAndIsNotCached) {
  Harness h;
  h.client.mode = Mode::kWrongVin;
  EXPECT_EQ(h.Decode(kVin).status, DecodeStatus::kUpstreamError);
  EXPECT_EQ(h.cache->Stats().entries, 0U);
}

TEST(DecodeServiceTest, HungUpstreamAnswersUpstreamSlowAtTheBudget) {
  Harness h({.call_timeout = 60ms});
  h.client.mode = Mode::kHang;
  const DecodeAnswer answer = h.Decode(kVin);
  EXPECT_EQ(answer.status, DecodeStatus::kUpstreamSlow);
  EXPECT_EQ(answer.http_status(), 504U);
  EXPECT_EQ(h.breaker->Snapshot().timeouts, 1U);
  EXPECT_EQ(h.client.cancelled, 1);  // the call was aborted, not abandoned
}

TEST(DecodeServiceTest, ThreeFailuresOpenTheBreakerAndTheNextCallFailsFast) {
  Harness h;
  h.Trip();
  const DecodeAnswer answer = h.Decode(kVin);
  EXPECT_EQ(answer.status, DecodeStatus::kCircuitOpen);
  EXPECT_EQ(answer.http_status(), 503U);
  EXPECT_EQ(fusebox::gateway::RetryAfterSeconds(answer.retry_after), 20);
  EXPECT_EQ(h.client.calls, 3);
}

TEST(DecodeServiceTest, LastGoodDecodeIsServedStaleWhenTheBreakerIsOpen) {
  Harness h;
  h.Decode(kVin);
  h.wall.Advance(25h);  // past the TTL: a live decode is needed
  h.Trip();
  const DecodeAnswer answer = h.Decode(kVin);
  EXPECT_EQ(answer.status, DecodeStatus::kCircuitOpen);
  EXPECT_TRUE(answer.stale);
  EXPECT_EQ(answer.source, Source::kCache);
  EXPECT_EQ(answer.http_status(), 200U);
  EXPECT_EQ(answer.message, fusebox::gateway::kStaleMessage);
  ASSERT_TRUE(answer.decode);
  EXPECT_EQ(answer.decode->vehicle.at("model"), "F-150");
}

TEST(DecodeServiceTest, LastGoodDecodeIsServedStaleWhenTheUpstreamIsSlow) {
  Harness h({.call_timeout = 60ms});
  h.Decode(kVin);
  h.wall.Advance(25h);
  h.client.mode = Mode::kHang;
  const DecodeAnswer answer = h.Decode(kVin);
  EXPECT_EQ(answer.status, DecodeStatus::kUpstreamSlow);
  EXPECT_TRUE(answer.stale);
  EXPECT_EQ(answer.http_status(), 200U);
}

// ---- the answer deadline ----

// Runs the io_context one handler at a time until `slot` holds an answer (the answer deadline's
// timer, a few milliseconds away, or the live answer).
void RunUntilAnswered(Harness& h, const std::shared_ptr<std::optional<DecodeAnswer>>& slot) {
  h.io.restart();
  while (!slot->has_value() && h.io.run_one() > 0) {
  }
}

TEST(DecodeServiceTest, ALateLiveDecodeIsAnsweredWithItsStaleCopyAndStillFillsTheCache) {
  Harness h({.answer_deadline = 5ms});
  ASSERT_EQ(h.Decode(kVin).status, DecodeStatus::kOk);
  h.wall.Advance(25h);  // past the TTL: the copy is stale
  h.client.hold = true;
  auto slot = h.Start(kVin);
  RunUntilAnswered(h, slot);
  ASSERT_TRUE(slot->has_value());
  const DecodeAnswer& late = **slot;
  EXPECT_EQ(late.status, DecodeStatus::kUpstreamLate);
  EXPECT_TRUE(late.stale);
  EXPECT_EQ(late.source, Source::kCache);
  EXPECT_EQ(late.http_status(), 200U);
  EXPECT_EQ(h.client.calls, 2);  // the live call was made and goes on
  h.client.Release();
  h.io.restart();
  h.io.run();
  const DecodeAnswer next = h.Decode(kVin);
  EXPECT_EQ(next.status, DecodeStatus::kOk);
  EXPECT_EQ(next.source, Source::kCache);  // a fresh hit: the late live answer was stored
  EXPECT_FALSE(next.stale);
  EXPECT_EQ(h.client.calls, 2);
  EXPECT_EQ(h.metrics.answers(DecodeStatus::kUpstreamLate), 1U);
}

// The log's account of a late call: the request's answer says it led a call whose end it has not
// seen; the call's end is told to on_late_call, with its latency and the breaker's outcome.
TEST(DecodeServiceTest, ALateCallsEndIsToldForTheLog) {
  std::vector<fusebox::gateway::LateCall> late_calls;
  Harness h({.answer_deadline = 5ms, .on_late_call = [&](const fusebox::gateway::LateCall& c) {
               late_calls.push_back(c);
             }});
  const DecodeAnswer first = h.Decode(kVin);
  EXPECT_TRUE(first.led_call);
  ASSERT_TRUE(first.upstream_outcome);
  EXPECT_EQ(*first.upstream_outcome, fusebox::Outcome::kSuccess);
  EXPECT_TRUE(late_calls.empty());  // answered by its call: nothing more to tell
  h.wall.Advance(25h);
  h.client.hold = true;
  auto slot = h.Start(kVin);
  RunUntilAnswered(h, slot);
  ASSERT_TRUE(slot->has_value());
  EXPECT_EQ((*slot)->status, DecodeStatus::kUpstreamLate);
  EXPECT_TRUE((*slot)->led_call);
  EXPECT_FALSE((*slot)->upstream_outcome);
  h.client.Release();
  h.io.restart();
  h.io.run();
  ASSERT_EQ(late_calls.size(), 1U);
  EXPECT_EQ(late_calls[0].vin, kVin);
  EXPECT_EQ(late_calls[0].outcome, fusebox::Outcome::kSuccess);
}

// A follower of another request's call did not lead one; a failed call's outcome is the
// breaker's.
TEST(DecodeServiceTest, AnswersSayWhetherTheirRequestLedTheCall) {
  Harness h;
  h.client.hold = true;
  auto leader = h.Start(kVin);
  auto follower = h.Start(kVin);
  h.Poll();
  h.client.Release();
  h.io.restart();
  h.io.run();
  ASSERT_TRUE(leader->has_value() && follower->has_value());
  EXPECT_TRUE((*leader)->led_call);
  EXPECT_FALSE((*follower)->led_call);
  EXPECT_TRUE((*follower)->joined);
  h.client.mode = Mode::kStatus;
  h.client.status = 503;
  const DecodeAnswer failed = h.Decode(kOthers[0]);
  EXPECT_TRUE(failed.led_call);
  ASSERT_TRUE(failed.upstream_outcome);
  EXPECT_EQ(*failed.upstream_outcome, fusebox::Outcome::kFailure);
}

TEST(DecodeServiceTest, WithoutACopyTheAnswerDeadlineDoesNotCutTheWait) {
  Harness h({.answer_deadline = 1ms});
  h.client.hold = true;
  auto slot = h.Start(kVin);
  h.io.restart();
  h.io.run_for(30ms);  // well past the answer deadline
  EXPECT_FALSE(slot->has_value());
  h.client.Release();
  RunUntilAnswered(h, slot);
  ASSERT_TRUE(slot->has_value());
  EXPECT_EQ((*slot)->status, DecodeStatus::kOk);
  EXPECT_EQ((*slot)->source, Source::kLive);
}

// A batch applies the deadline per VIN: the VIN with a copy gets it late, the other waits for the
// call, whose answer then fills the cache for both.
TEST(DecodeServiceTest, ABatchAnswersItsVinsWithACopyByTheDeadlineAndWaitsForTheOthers) {
  Harness h({.answer_deadline = 5ms});
  ASSERT_EQ(h.Decode(kVin).status, DecodeStatus::kOk);
  h.wall.Advance(25h);  // kVin's copy is stale now; kOthers[0] has none
  h.client.hold = true;
  std::optional<std::vector<DecodeAnswer>> out;
  net::co_spawn(h.io, h.service->DecodeBatch({kVin, kOthers.at(0)}, 0, "10.0.0.1"),
                [&out](std::exception_ptr error, std::vector<DecodeAnswer> answers) {
                  if (!error) {
                    out = std::move(answers);
                  }
                });
  h.io.restart();
  h.io.run_for(30ms);  // past the deadline: still waiting for the VIN without a copy
  EXPECT_FALSE(out.has_value());
  h.client.Release();
  h.io.restart();
  h.io.run();
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->size(), 2U);
  EXPECT_EQ((*out)[0].status, DecodeStatus::kUpstreamLate);
  EXPECT_TRUE((*out)[0].stale);
  EXPECT_EQ((*out)[1].status, DecodeStatus::kOk);
  EXPECT_EQ((*out)[1].source, Source::kLive);
  EXPECT_EQ(h.Decode(kVin).source, Source::kCache);  // refreshed by the call that went on
  EXPECT_FALSE(h.Decode(kVin).stale);
}

// ---- the words follow the vehicle database's problem ----

TEST(DecodeServiceTest, AnOpenBreakerSaysTheDatabaseReturnsErrorsWhenItDid) {
  Harness h;
  h.Trip();  // three 503s
  const DecodeAnswer open = h.Decode(kVin);
  EXPECT_EQ(open.status, DecodeStatus::kCircuitOpen);
  EXPECT_EQ(open.upstream_problem, fusebox::gateway::UpstreamProblem::kErrors);
  EXPECT_NE(open.message.find("returning errors"), std::string::npos) << open.message;
  EXPECT_NE(fusebox::gateway::AnswerBody(open).find("\"upstream_problem\":\"errors\""),
            std::string::npos);
}

TEST(DecodeServiceTest, AnOpenBreakerSaysTheDatabaseIsNotRespondingAfterTimeouts) {
  Harness h({.call_timeout = 5ms, .failure_threshold = 1});
  h.client.mode = Mode::kHang;
  EXPECT_EQ(h.Decode(kOthers.at(0)).status, DecodeStatus::kUpstreamSlow);
  ASSERT_EQ(h.breaker->state(), fusebox::State::kOpen);
  const DecodeAnswer open = h.Decode(kVin);
  EXPECT_EQ(open.status, DecodeStatus::kCircuitOpen);
  EXPECT_EQ(open.upstream_problem, fusebox::gateway::UpstreamProblem::kSlow);
  EXPECT_NE(open.message.find("not responding"), std::string::npos) << open.message;
}

TEST(DecodeServiceTest, ConcurrentRequestsAtCooldownExpiryMakeExactlyOneUpstreamCall) {
  Harness h;
  h.Trip();
  const int before = h.client.calls;
  h.clock.Advance(20s);
  h.client.mode = Mode::kOk;
  h.client.hold = true;
  std::vector<std::shared_ptr<std::optional<DecodeAnswer>>> answers;
  for (int i = 0; i < 20; ++i) {
    answers.push_back(h.Start(kOthers.at(static_cast<std::size_t>(i))));
  }
  h.Poll();
  EXPECT_EQ(h.client.calls, before + 1);
  h.client.Release();
  h.io.restart();
  h.io.run();
  int ok = 0;
  int half_open = 0;
  for (const auto& answer : answers) {
    ASSERT_TRUE(answer->has_value());
    ok += (*answer)->status == DecodeStatus::kOk ? 1 : 0;
    half_open += (*answer)->status == DecodeStatus::kCircuitHalfOpen ? 1 : 0;
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(half_open, 19);
  EXPECT_EQ(h.client.calls, before + 1);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
}

TEST(DecodeServiceTest, HalfOpenRejectionCarriesRetryAfterOfAtLeastOneSecond) {
  Harness h;
  h.Trip();
  h.clock.Advance(20s);
  h.client.mode = Mode::kOk;
  h.client.hold = true;
  auto probe = h.Start(kOthers.at(5));
  h.Poll();
  const DecodeAnswer extra = [&] {
    auto slot = h.Start(kOthers.at(6));
    h.Poll();
    return slot->value_or(DecodeAnswer{});
  }();
  EXPECT_EQ(extra.status, DecodeStatus::kCircuitHalfOpen);
  EXPECT_GE(fusebox::gateway::RetryAfterSeconds(extra.retry_after), 1);
  h.client.Release();
  h.io.restart();
  h.io.run();
  EXPECT_EQ(probe->value_or(DecodeAnswer{}).status, DecodeStatus::kOk);
}

TEST(DecodeServiceTest, BatchNeverTakesTheProbe) {
  Harness h;
  h.Trip();
  h.clock.Advance(20s);
  h.client.mode = Mode::kOk;
  const int before = h.client.calls;
  const std::vector<DecodeAnswer> batch = h.Batch({kOthers.at(7), kOthers.at(8)});
  ASSERT_EQ(batch.size(), 2U);
  EXPECT_EQ(batch[0].status, DecodeStatus::kCircuitHalfOpen);
  EXPECT_EQ(batch[1].status, DecodeStatus::kCircuitHalfOpen);
  EXPECT_EQ(h.client.calls, before);
  // The probe slot is still there for an interactive request.
  EXPECT_EQ(h.Decode(kOthers.at(9)).status, DecodeStatus::kOk);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
}

TEST(DecodeServiceTest, ThirtyIdenticalRequestsMakeOneUpstreamCall) {
  Harness h;
  h.client.hold = true;
  std::vector<std::shared_ptr<std::optional<DecodeAnswer>>> answers;
  for (int i = 0; i < 30; ++i) {
    answers.push_back(h.Start(kVin));
  }
  h.Poll();
  h.client.Release();
  h.io.restart();
  h.io.run();
  EXPECT_EQ(h.client.calls, 1);
  int joined = 0;
  for (const auto& answer : answers) {
    ASSERT_TRUE(answer->has_value());
    EXPECT_EQ((*answer)->status, DecodeStatus::kOk);
    joined += (*answer)->joined ? 1 : 0;
  }
  EXPECT_EQ(joined, 29);
  EXPECT_EQ(h.metrics.joins(), 29U);
}

TEST(DecodeServiceTest, FollowersShareAFailureWithoutCallingAgain) {
  Harness h({.call_timeout = 60ms});
  h.client.mode = Mode::kHang;
  auto first = h.Start(kVin);
  auto second = h.Start(kVin);
  h.io.run();
  EXPECT_EQ(first->value_or(DecodeAnswer{}).status, DecodeStatus::kUpstreamSlow);
  EXPECT_EQ(second->value_or(DecodeAnswer{}).status, DecodeStatus::kUpstreamSlow);
  EXPECT_EQ(h.client.calls, 1);
}

TEST(DecodeServiceTest, FullBulkheadIsOverloadedBeforeTheBreakerIsAsked) {
  Harness h({.max_in_flight = 1});
  h.client.hold = true;
  auto first = h.Start(kOthers.at(0));
  h.Poll();
  auto second = h.Start(kOthers.at(1));
  h.Poll();
  ASSERT_TRUE(second->has_value());
  EXPECT_EQ((*second)->status, DecodeStatus::kOverloaded);
  EXPECT_EQ((*second)->http_status(), 503U);
  EXPECT_GE(fusebox::gateway::RetryAfterSeconds((*second)->retry_after), 1);
  EXPECT_EQ(h.breaker->Snapshot().calls, 1U);  // only the first asked the breaker
  h.client.Release();
  h.io.restart();
  h.io.run();
  EXPECT_EQ(first->value_or(DecodeAnswer{}).status, DecodeStatus::kOk);
}

TEST(DecodeServiceTest, AnAdaptiveCapIsOverloadedAtItsLimit) {
  Harness h({.max_in_flight = 2, .adaptive = true});  // starts at 16 clamped to [1, 2]
  ASSERT_TRUE(h.limits->adaptive());
  EXPECT_EQ(h.limits->limit(), 2U);
  h.client.hold = true;
  auto first = h.Start(kOthers.at(0));
  auto second = h.Start(kOthers.at(1));
  h.Poll();
  auto third = h.Start(kOthers.at(2));
  h.Poll();
  ASSERT_TRUE(third->has_value());
  EXPECT_EQ((*third)->status, DecodeStatus::kOverloaded);
  EXPECT_EQ(h.limits->in_flight(), 2U);
  h.client.Release();
  h.io.restart();
  h.io.run();
  EXPECT_EQ(first->value_or(DecodeAnswer{}).status, DecodeStatus::kOk);
  EXPECT_EQ(second->value_or(DecodeAnswer{}).status, DecodeStatus::kOk);
  EXPECT_EQ(h.limits->in_flight(), 0U);
}

// vPIC refuses everything with 503 but the breaker would need 1000 in a row: the throttle sheds
// the calls instead, each answered THROTTLED (503, Retry-After), and vPIC is spared them.
TEST(DecodeServiceTest, TheThrottleShedsWhileVpicRefusesMost) {
  Harness h({.failure_threshold = 1000, .throttle_k = 2});
  h.client.mode = Mode::kStatus;
  h.client.status = 503;
  int throttled = 0;
  for (int i = 0; i < 60; ++i) {
    const DecodeAnswer answer = h.Decode(kOthers.at(static_cast<std::size_t>(i) % kOthers.size()));
    if (answer.status == DecodeStatus::kThrottled) {
      ++throttled;
      EXPECT_EQ(answer.http_status(), 503U);
      EXPECT_GE(fusebox::gateway::RetryAfterSeconds(answer.retry_after), 1);
    } else {
      EXPECT_EQ(answer.status, DecodeStatus::kUpstreamError);
    }
  }
  EXPECT_GT(throttled, 30);  // p = r / (r + 1) once everything failed
  EXPECT_EQ(h.client.calls, 60 - throttled);
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);  // the throttle shed, not the breaker
  ASSERT_NE(h.limits->throttle(), nullptr);
  EXPECT_EQ(h.limits->throttle()->Stats().refused, static_cast<std::uint64_t>(throttled));

  // vPIC recovers: once the window has passed, nothing is shed.
  h.client.mode = Mode::kOk;
  h.clock.Advance(10s);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(h.Decode(kOthers.at(static_cast<std::size_t>(i))).status, DecodeStatus::kOk);
  }
}

TEST(DecodeServiceTest, EmptyBucketIsRateLimitedWithoutAnUpstreamCall) {
  Harness h({.rate = 1, .burst = 1});
  EXPECT_EQ(h.Decode(kOthers.at(0)).status, DecodeStatus::kOk);
  const DecodeAnswer limited = h.Decode(kOthers.at(1));
  EXPECT_EQ(limited.status, DecodeStatus::kRateLimited);
  EXPECT_EQ(limited.http_status(), 429U);
  EXPECT_EQ(fusebox::gateway::RetryAfterSeconds(limited.retry_after), 1);
  EXPECT_EQ(h.client.calls, 1);
  // Another client has its own bucket.
  EXPECT_EQ(h.Decode(kOthers.at(1), 0, "10.0.0.2").status, DecodeStatus::kOk);
}

TEST(DecodeServiceTest, CacheHitsTakeNoRateToken) {
  Harness h({.rate = 1, .burst = 1});
  h.Decode(kVin);
  EXPECT_EQ(h.Decode(kVin).status, DecodeStatus::kOk);
  EXPECT_EQ(h.Decode(kVin).status, DecodeStatus::kOk);
}

TEST(DecodeServiceTest, TooManyRequestsMeansRetryAfterFromThe429AsMinimumCooldown) {
  Harness h({.cooldown = 1s, .failure_threshold = 1});
  h.client.mode = Mode::kStatus;
  h.client.status = 429;
  h.client.retry_after = 30s;
  EXPECT_EQ(h.Decode(kOthers.at(0)).status, DecodeStatus::kUpstreamError);
  ASSERT_EQ(h.breaker->state(), fusebox::State::kOpen);
  h.clock.Advance(2s);  // past the breaker's own cooldown, not past the 429's
  h.client.mode = Mode::kOk;
  const DecodeAnswer answer = h.Decode(kOthers.at(1));
  EXPECT_EQ(answer.status, DecodeStatus::kCircuitOpen);
  EXPECT_EQ(fusebox::gateway::RetryAfterSeconds(answer.retry_after), 28);
  EXPECT_EQ(h.client.calls, 1);
  h.clock.Advance(28s);
  EXPECT_EQ(h.Decode(kOthers.at(1)).status, DecodeStatus::kOk);
  EXPECT_EQ(h.client.calls, 2);
}

TEST(DecodeServiceTest, ClientThatGoesAwayDoesNotCancelTheUpstreamCall) {
  Harness h;
  h.client.hold = true;
  net::cancellation_signal cancel;
  bool finished = false;
  net::co_spawn(
      h.io, h.service->Decode(kVin, 0, "10.0.0.1"),
      net::bind_cancellation_slot(
          cancel.slot(), [&finished](std::exception_ptr, DecodeAnswer) { finished = true; }));
  h.Poll();
  ASSERT_EQ(h.client.waiting(), 1U);
  cancel.emit(net::cancellation_type::terminal);
  h.Poll();
  EXPECT_TRUE(finished);
  h.client.Release();
  h.io.restart();
  h.io.run();
  EXPECT_EQ(h.breaker->Snapshot().succeeded, 1U);
  EXPECT_EQ(h.cache->Stats().entries, 1U);
}

TEST(DecodeServiceTest, BrokenCacheFileStillServesLiveDecodes) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "vin_gateway_broken_cache_test";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "cache.sqlite";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << std::string(8192, 'x');
  }
  // Without the in-process front, every decode must then be live.
  Harness h({.cache = fusebox::gateway::MakeSqliteCache(file.string(), 100), .hot_entries = 0});
  EXPECT_FALSE(h.cache->Stats().healthy);
  EXPECT_EQ(h.Decode(kVin).status, DecodeStatus::kOk);
  EXPECT_EQ(h.Decode(kVin).source, Source::kLive);
  std::filesystem::remove_all(dir);
}

TEST(DecodeServiceTest, HotFrontServesRepeatsWithoutReadingTheBackend) {
  Harness h;
  ASSERT_EQ(h.Decode(kVin).source, Source::kLive);
  const std::uint64_t gets = h.cache->Stats().gets;
  const DecodeAnswer again = h.Decode(kVin);
  EXPECT_EQ(again.source, Source::kCache);
  EXPECT_EQ(again.decode->vin, kVin);
  EXPECT_EQ(h.cache->Stats().gets, gets);  // the front answered
  EXPECT_EQ(h.client.calls, 1);
}

TEST(DecodeServiceTest, HotFrontKeepsTheTtl) {
  Harness h;
  ASSERT_EQ(h.Decode(kVin).source, Source::kLive);
  h.wall.Advance(25h);  // past the 24 h TTL: neither the front nor the backend is fresh
  EXPECT_EQ(h.Decode(kVin).source, Source::kLive);
  EXPECT_EQ(h.client.calls, 2);
}

TEST(DecodeServiceTest, FreshHitBodyIsRenderedOnceAndIsTheAnswersJson) {
  Harness h;
  ASSERT_EQ(h.Decode(kVin).source, Source::kLive);
  const DecodeAnswer first = h.Decode(kVin);
  const DecodeAnswer second = h.Decode(kVin);
  ASSERT_NE(first.rendered_body, nullptr);
  EXPECT_EQ(second.rendered_body, first.rendered_body);  // the same bytes, not rendered again
  DecodeAnswer unrendered = second;
  unrendered.rendered_body = nullptr;
  EXPECT_EQ(*second.rendered_body,
            boost::json::serialize(fusebox::gateway::AnswerJson(unrendered)));

  h.wall.Advance(25h);  // a new live decode replaces the stored one, and with it the body
  ASSERT_EQ(h.Decode(kVin).source, Source::kLive);
  const DecodeAnswer third = h.Decode(kVin);
  ASSERT_NE(third.rendered_body, nullptr);
  EXPECT_NE(*third.rendered_body, *first.rendered_body);  // fetched_at moved on
  unrendered = third;
  unrendered.rendered_body = nullptr;
  EXPECT_EQ(*third.rendered_body, boost::json::serialize(fusebox::gateway::AnswerJson(unrendered)));
}

TEST(DecodeServiceTest, LiveAndStaleAnswersAreRenderedPerRequest) {
  Harness h;
  EXPECT_EQ(h.Decode(kVin).rendered_body, nullptr);  // live
  h.wall.Advance(25h);
  h.Trip();
  const DecodeAnswer stale = h.Decode(kVin);
  ASSERT_TRUE(stale.stale);
  EXPECT_EQ(stale.rendered_body, nullptr);  // carries this request's reason and Retry-After
}

TEST(DecodeServiceTest, RejectionReadsTheBackendOnce) {
  // Without the front every lookup is a backend read: a rejection makes exactly one, whether
  // or not there is a stale copy to serve.
  Harness h({.hot_entries = 0});
  ASSERT_EQ(h.Decode(kVin).source, Source::kLive);
  h.wall.Advance(25h);
  h.Trip();
  std::uint64_t gets = h.cache->Stats().gets;
  const DecodeAnswer stale = h.Decode(kVin);
  EXPECT_EQ(stale.status, DecodeStatus::kCircuitOpen);
  EXPECT_TRUE(stale.stale);
  EXPECT_EQ(h.cache->Stats().gets, gets + 1);

  gets = h.cache->Stats().gets;
  const DecodeAnswer bare = h.Decode(kOthers.at(10));
  EXPECT_EQ(bare.status, DecodeStatus::kCircuitOpen);
  EXPECT_FALSE(bare.stale);
  EXPECT_EQ(h.cache->Stats().gets, gets + 1);
  EXPECT_EQ(h.service->leaders_running(), 0);
  EXPECT_EQ(h.service->single_flight_in_flight(), 0U);  // the refused flight is over
}

TEST(DecodeServiceTest, RejectedLeaderHasTakenItsRateTokenFirst) {
  Harness h({.failure_threshold = 1, .rate = 1, .burst = 2});
  h.Trip();  // one failed call of 10.0.0.1
  const DecodeAnswer open = h.Decode(kVin, 0, "10.0.0.2");
  EXPECT_EQ(open.status, DecodeStatus::kCircuitOpen);
  const DecodeAnswer again = h.Decode(kVin, 0, "10.0.0.2");
  EXPECT_EQ(again.status, DecodeStatus::kCircuitOpen);
  const DecodeAnswer limited = h.Decode(kVin, 0, "10.0.0.2");
  EXPECT_EQ(limited.status, DecodeStatus::kRateLimited);  // the rate limit comes first
}

TEST(HotDecodesTest, EvictsTheLeastRecentlyUsed) {
  fusebox::gateway::HotDecodes hot(2);
  const auto decode = [](const char* vin) {
    auto d = std::make_shared<fusebox::gateway::Decode>();
    d->vin = vin;
    return fusebox::gateway::DecodePtr(d);
  };
  hot.Put("a", decode("A"));
  hot.Put("b", decode("B"));
  ASSERT_NE(hot.Get("a"), nullptr);  // a is now the most recent
  hot.Put("c", decode("C"));         // evicts b
  EXPECT_EQ(hot.Get("b"), nullptr);
  EXPECT_EQ(hot.Get("a")->vin, "A");
  EXPECT_EQ(hot.Get("c")->vin, "C");
  EXPECT_EQ(hot.size(), 2U);
  hot.Put("a", decode("A2"));  // replaces in place
  EXPECT_EQ(hot.Get("a")->vin, "A2");
  EXPECT_EQ(hot.size(), 2U);
}

TEST(HotDecodesTest, FreshBodyBelongsToTheDecodeItWasRenderedFor) {
  fusebox::gateway::HotDecodes hot(4);
  auto first = std::make_shared<const fusebox::gateway::Decode>();
  auto second = std::make_shared<const fusebox::gateway::Decode>();
  auto body = std::make_shared<const std::string>("{}");
  hot.Put("a", first);
  hot.AttachFreshBody("a", second, body);  // not the stored decode: dropped
  EXPECT_EQ(hot.Lookup("a").fresh_body, nullptr);
  hot.AttachFreshBody("a", first, body);
  EXPECT_EQ(hot.Lookup("a").fresh_body, body);
  hot.Put("a", first);  // the same decode again (a backend re-read): the body stays
  EXPECT_EQ(hot.Lookup("a").fresh_body, body);
  hot.Put("a", second);  // a new decode: its body is not rendered yet
  EXPECT_EQ(hot.Lookup("a").decode, second);
  EXPECT_EQ(hot.Lookup("a").fresh_body, nullptr);
  hot.AttachFreshBody("missing", first, body);
  EXPECT_EQ(hot.Lookup("missing").decode, nullptr);
}

TEST(HotDecodesTest, CapacityZeroKeepsNothing) {
  fusebox::gateway::HotDecodes hot(0);
  auto d = std::make_shared<fusebox::gateway::Decode>();
  hot.Put("a", d);
  EXPECT_EQ(hot.Get("a"), nullptr);
  EXPECT_EQ(hot.size(), 0U);
}

TEST(DecodeServiceTest, BatchAnswersInvalidLocallyHitsFromCacheAndTheRestInOneCall) {
  Harness h;
  h.Decode(kVin);
  const int before = h.client.calls;
  const std::vector<DecodeAnswer> batch =
      h.Batch({kOthers.at(0), "NOT-A-VIN", kVin, kOthers.at(1), kOthers.at(0)});
  ASSERT_EQ(batch.size(), 5U);
  EXPECT_EQ(batch[0].status, DecodeStatus::kOk);
  EXPECT_EQ(batch[0].source, Source::kLive);
  EXPECT_EQ(batch[1].status, DecodeStatus::kVinInvalid);
  EXPECT_EQ(batch[2].source, Source::kCache);
  EXPECT_EQ(batch[3].vin, kOthers.at(1));
  EXPECT_EQ(batch[3].decode->vin, kOthers.at(1));
  EXPECT_EQ(batch[4].status, DecodeStatus::kOk);
  EXPECT_EQ(h.client.calls, before + 1);
  EXPECT_EQ(h.client.batch_calls, 1);
  EXPECT_EQ(h.client.asked.size(), static_cast<std::size_t>(before) + 2U);  // deduplicated
  EXPECT_EQ(h.breaker->Snapshot().allowed, static_cast<std::uint64_t>(before) + 1U);
}

// Five 50-VIN batches against a bucket of 2 used to send 5 x 50 VINs upstream (the cost was capped
// at the bucket size); now each VIN sent upstream takes a token: 2 go, the rest wait.
TEST(DecodeServiceTest, BatchLargerThanTheBucketIsAnsweredInPart) {
  Harness h({.rate = 1, .burst = 2});
  // kOthers[0] twice (one upstream item, one token), an invalid VIN (no token), then three more.
  const std::vector<DecodeAnswer> batch = h.Batch(
      {kOthers.at(0), "NOT-A-VIN", kOthers.at(0), kOthers.at(1), kOthers.at(2), kOthers.at(3)});
  ASSERT_EQ(batch.size(), 6U);
  EXPECT_EQ(batch[0].status, DecodeStatus::kOk);
  EXPECT_EQ(batch[1].status, DecodeStatus::kVinInvalid);
  EXPECT_EQ(batch[2].status, DecodeStatus::kOk);
  EXPECT_EQ(batch[3].status, DecodeStatus::kOk);
  for (std::size_t i : {4U, 5U}) {
    EXPECT_EQ(batch[i].status, DecodeStatus::kRateLimited) << i;
    EXPECT_EQ(batch[i].vin, kOthers.at(i - 2));
    // Until the bucket holds both again: 2 s at 1 token/s.
    EXPECT_EQ(fusebox::gateway::RetryAfterSeconds(batch[i].retry_after), 2) << i;
  }
  EXPECT_EQ(h.client.batch_calls, 1);
  EXPECT_EQ(h.client.asked, (std::vector<std::string>{kOthers.at(0), kOthers.at(1)}));

  // Four more full batches at once: the bucket is empty, nothing goes upstream.
  std::vector<std::string> fifty(kOthers.begin(), kOthers.end());
  while (fifty.size() < 50) {
    // Valid VINs of their own (the check digit may not compute: still decoded).
    const std::string n = std::to_string(100000 + fifty.size());
    fifty.push_back("1FTMW1T88MB" + n);
  }
  for (int round = 0; round < 4; ++round) {
    const std::vector<DecodeAnswer> limited = h.Batch(fifty);
    ASSERT_EQ(limited.size(), 50U);
    for (std::size_t i = 0; i < limited.size(); ++i) {
      if (limited[i].vin == kOthers.at(0) || limited[i].vin == kOthers.at(1)) {
        EXPECT_EQ(limited[i].source, Source::kCache) << i;  // decoded above: no token needed
      } else {
        EXPECT_EQ(limited[i].status, DecodeStatus::kRateLimited) << i;
      }
    }
  }
  EXPECT_EQ(h.client.calls, 1);
  EXPECT_EQ(h.client.asked.size(), 2U);

  // One second later one token is back: exactly one more VIN, the first that missed the cache.
  h.clock.Advance(1s);
  const std::vector<DecodeAnswer> refilled = h.Batch(fifty);
  EXPECT_EQ(refilled.at(2).status, DecodeStatus::kOk);
  EXPECT_EQ(refilled.at(2).source, Source::kLive);
  EXPECT_EQ(refilled.at(3).status, DecodeStatus::kRateLimited);
  EXPECT_EQ(h.client.asked.size(), 3U);
  EXPECT_EQ(h.client.asked.back(), kOthers.at(2));
}

TEST(DecodeServiceTest, BatchWithinTheBucketTakesOneTokenPerCacheMiss) {
  Harness h({.rate = 1, .burst = 3});
  h.Decode(kVin);  // one token; a hit later takes none
  const std::vector<DecodeAnswer> batch = h.Batch({kVin, kOthers.at(0), kOthers.at(1)});
  EXPECT_EQ(batch.at(0).source, Source::kCache);
  EXPECT_EQ(batch.at(1).status, DecodeStatus::kOk);
  EXPECT_EQ(batch.at(2).status, DecodeStatus::kOk);
  const std::vector<DecodeAnswer> again = h.Batch({kOthers.at(4)});
  EXPECT_EQ(again.at(0).status, DecodeStatus::kRateLimited);
}

TEST(DecodeServiceTest, TransitionLogKeepsTheLastTransitionsOldestFirst) {
  fusebox::gateway::TransitionLog log(3);
  const fusebox::gateway::WallTime start{};
  for (int i = 0; i < 5; ++i) {
    fusebox::TransitionEvent event;
    event.from = i % 2 == 0 ? fusebox::State::kClosed : fusebox::State::kOpen;
    event.to = i % 2 == 0 ? fusebox::State::kOpen : fusebox::State::kClosed;
    log.Record(event, start + std::chrono::seconds(i));
  }
  const std::vector<fusebox::gateway::TransitionRecord> recent = log.Recent();
  ASSERT_EQ(recent.size(), 3U);
  EXPECT_EQ(recent.front().at, start + 2s);
  EXPECT_EQ(recent.front().to, fusebox::State::kOpen);
  EXPECT_EQ(recent.back().at, start + 4s);
  EXPECT_EQ(log.total(), 5U);
}

TEST(DecodeServiceTest, TransitionLogOfZeroCapacityStillKeepsTheLatest) {
  fusebox::gateway::TransitionLog log(0);
  log.Record(fusebox::TransitionEvent{}, fusebox::gateway::WallTime{});
  log.Record(fusebox::TransitionEvent{}, fusebox::gateway::WallTime{} + 1s);
  ASSERT_EQ(log.Recent().size(), 1U);
  EXPECT_EQ(log.Recent().front().at, fusebox::gateway::WallTime{} + 1s);
}

TEST(DecodeServiceTest, RecordsTheBreakersTransitionsWithWallClockTimes) {
  Harness h({.cooldown = 5s});
  h.wall.Advance(1h);
  h.Trip();
  h.clock.Advance(5s);
  h.wall.Advance(5s);
  h.client.mode = Mode::kOk;
  EXPECT_EQ(h.Decode(kVin).status, DecodeStatus::kOk);  // the probe closes the breaker
  const std::vector<fusebox::gateway::TransitionRecord> recent = h.service->recent_transitions();
  ASSERT_EQ(recent.size(), 3U);
  EXPECT_EQ(recent[0].from, fusebox::State::kClosed);
  EXPECT_EQ(recent[0].to, fusebox::State::kOpen);
  EXPECT_EQ(recent[0].cause, fusebox::TransitionCause::kConsecutiveFailures);
  EXPECT_EQ(fusebox::gateway::FormatRfc3339(recent[0].at), "2024-05-01T01:00:00Z");
  EXPECT_EQ(recent[1].to, fusebox::State::kHalfOpen);
  EXPECT_EQ(recent[2].to, fusebox::State::kClosed);
  EXPECT_EQ(fusebox::gateway::FormatRfc3339(recent[2].at), "2024-05-01T01:00:05Z");
}

TEST(DecodeServiceTest, KeepsAtMostTenTransitions) {
  Harness h({.cooldown = 1s, .failure_threshold = 1});
  h.client.mode = Mode::kStatus;
  h.client.status = 503;
  for (int i = 0; i < 8; ++i) {  // each round: CLOSED/HALF_OPEN -> OPEN -> HALF_OPEN
    h.Decode(kOthers.at(static_cast<std::size_t>(i)));
    h.clock.Advance(1s);
  }
  const std::vector<fusebox::gateway::TransitionRecord> recent = h.service->recent_transitions();
  EXPECT_EQ(recent.size(), fusebox::gateway::TransitionLog::kDefaultCapacity);
  EXPECT_EQ(recent.back().to, fusebox::State::kOpen);
}

// --- Local resource failures are never upstream failures -----------------------------------

// What the HTTP client answers when the gateway has no descriptor left for the upstream socket.
fusebox::gateway::UpstreamReply NoDescriptorLeft() {
  fusebox::gateway::UpstreamReply reply;
  reply.transport = fusebox::gateway::UpstreamReply::Transport::kLocal;
  reply.detail = "connect 127.0.0.1:9000: Too many open files";
  return reply;
}

TEST(DecodeServiceTest, DescriptorExhaustionNeverOpensTheBreaker) {
  Harness h;  // threshold 3
  h.client.scripted = NoDescriptorLeft();
  for (std::size_t i = 0; i < 6; ++i) {
    const DecodeAnswer answer = h.Decode(kOthers.at(i));
    EXPECT_EQ(answer.status, DecodeStatus::kLocalOverloaded);
    EXPECT_EQ(answer.http_status(), 503U);
    EXPECT_EQ(answer.retry_after, 1s);
    EXPECT_NE(answer.upstream_detail.find("Too many open files"), std::string::npos)
        << answer.upstream_detail;
  }
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
  const fusebox::MetricsSnapshot snapshot = h.breaker->Snapshot();
  EXPECT_EQ(snapshot.failed, 0U);
  EXPECT_EQ(snapshot.timeouts, 0U);
  EXPECT_EQ(h.metrics.upstream_calls(fusebox::gateway::UpstreamResult::kLocal), 6U);
  EXPECT_EQ(h.metrics.upstream_calls(fusebox::gateway::UpstreamResult::kTransport), 0U);
  EXPECT_EQ(h.metrics.answers(DecodeStatus::kLocalOverloaded), 6U);
  // Descriptors free up: the next decode goes through at once (nothing to wait out).
  h.client.scripted.reset();
  EXPECT_EQ(h.Decode(kVin).status, DecodeStatus::kOk);
}

TEST(DecodeServiceTest, DescriptorExhaustionServesTheStoredDecodeStale) {
  Harness h;
  ASSERT_EQ(h.Decode(kVin).status, DecodeStatus::kOk);
  h.wall.Advance(25h);  // past the TTL: a live decode is needed
  h.client.scripted = NoDescriptorLeft();
  const DecodeAnswer answer = h.Decode(kVin);
  EXPECT_EQ(answer.status, DecodeStatus::kLocalOverloaded);
  EXPECT_TRUE(answer.stale);
  EXPECT_EQ(answer.source, Source::kCache);
  EXPECT_EQ(answer.http_status(), 200U);
  ASSERT_TRUE(answer.decode);
  EXPECT_EQ(answer.decode->vehicle.at("make"), "FORD");
}

TEST(DecodeServiceTest, DescriptorExhaustionInABatchNeverOpensTheBreaker) {
  Harness h({.failure_threshold = 1});
  h.client.scripted = NoDescriptorLeft();
  const std::vector<DecodeAnswer> answers = h.Batch({kOthers.at(0), kOthers.at(1)});
  ASSERT_EQ(answers.size(), 2U);
  for (const DecodeAnswer& answer : answers) {
    EXPECT_EQ(answer.status, DecodeStatus::kLocalOverloaded);
  }
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
}

// A backend that throws (out of memory in a write, a broken driver) breaks its own contract;
// still, the decode that the upstream answered is served live, and nothing is blamed on vPIC.
class ThrowingCache final : public fusebox::gateway::ImmediateCache {
 public:
  std::optional<fusebox::gateway::CacheEntry> GetNow(std::string_view) override {
    throw std::bad_alloc();
  }
  void PutNow(std::string_view, const fusebox::gateway::CacheEntry&) override {
    throw std::bad_alloc();
  }
  fusebox::gateway::CacheStats Stats() const override {
    fusebox::gateway::CacheStats stats;
    stats.backend = "throwing";
    stats.healthy = false;
    return stats;
  }
};

TEST(DecodeServiceTest, ThrowingCacheIsNeverBlamedOnTheUpstream) {
  Harness h({.cache = std::make_unique<ThrowingCache>(), .hot_entries = 0});
  for (int round = 0; round < 4; ++round) {
    const DecodeAnswer answer = h.Decode(kVin);
    EXPECT_EQ(answer.status, DecodeStatus::kOk) << fusebox::gateway::ToString(answer.status);
    EXPECT_EQ(answer.source, Source::kLive);
  }
  EXPECT_EQ(h.breaker->state(), fusebox::State::kClosed);
  EXPECT_EQ(h.breaker->Snapshot().failed, 0U);
  EXPECT_EQ(h.breaker->Snapshot().succeeded, 4U);
}

// A cache directory that cannot be written (here a file stands where the directory should be:
// the test runs as root in CI containers, where permissions do not stop a write; the process
// test in reliability_test.cc runs the gateway as an unprivileged user on a read-only one).
TEST(DecodeServiceTest, UnwritableCacheDirectoryKeepsLiveDecodes) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "vin_gateway_unwritable_cache_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "not-a-directory") << "x"; }
  Harness h(
      {.cache = fusebox::gateway::MakeSqliteCache((dir / "not-a-directory/c.sqlite").string(), 100),
       .hot_entries = 0});
  EXPECT_FALSE(h.cache->Stats().healthy);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(h.Decode(kOthers.at(i)).status, DecodeStatus::kOk);
  }
  EXPECT_EQ(h.breaker->Snapshot().failed, 0U);
  EXPECT_EQ(h.breaker->Snapshot().succeeded, 5U);
  std::filesystem::remove_all(dir);
}

// --- Defect: a hostile upstream could inflate the cache (30,000 fields, just under 1 MiB) ----

// A vPIC answer for `vin` with `fields` junk fields before the real ones, `size` bytes long.
std::string InflatedAnswer(const std::string& vin, int fields, std::size_t size) {
  std::string rows;
  const std::size_t per_field = (size - 400) / static_cast<std::size_t>(fields);
  for (int i = 0; i < fields; ++i) {
    std::string field = fmt::format(R"("Junk{:05}":")", i);
    field += std::string(per_field - field.size() - 2, 'x');
    field += "\",";
    rows += field;
  }
  std::string body = fmt::format(
      R"({{"Count":1,"Message":"ok","SearchCriteria":"VIN:{0}","Results":[{{{1})"
      R"("VIN":"{0}","Make":"FORD","Model":"F-150","ModelYear":"2021","ErrorCode":"0"}}]}})",
      vin, rows);
  body.resize(std::max(body.size(), size), ' ');  // trailing blanks are valid JSON
  return body;
}

TEST(DecodeServiceTest, UpstreamAnswerWithThousandsOfFieldsIsCachedBounded) {
  Harness h;
  fusebox::gateway::UpstreamReply reply;
  reply.status = 200;
  reply.body = InflatedAnswer(kVin, 30000, (1 << 20) - 1000);
  ASSERT_LT(reply.body.size(), std::size_t{1} << 20);
  ASSERT_GT(reply.body.size(), std::size_t{1000000});
  h.client.scripted = reply;
  const DecodeAnswer answer = h.Decode(kVin);
  ASSERT_EQ(answer.status, DecodeStatus::kOk);
  ASSERT_TRUE(answer.decode);
  const fusebox::gateway::Vehicle& vehicle = answer.decode->vehicle;
  // The fields the model keeps came through, wherever the upstream put them.
  EXPECT_EQ(vehicle.at("make"), "FORD");
  EXPECT_EQ(vehicle.at("model"), "F-150");
  EXPECT_EQ(answer.decode->upstream_codes, std::vector<int>{0});
  // The rest is bounded: fields, text, and the stored entry.
  EXPECT_LE(vehicle.size(), fusebox::gateway::kMaxVehicleFields);
  std::size_t text = 0;
  for (const auto& [key, value] : vehicle) {
    text += key.size() + value.size();
  }
  EXPECT_LE(text, fusebox::gateway::kMaxVehicleTextBytes);
  const std::string stored = fusebox::gateway::SerializeDecode(*answer.decode);
  EXPECT_LE(stored.size(), fusebox::gateway::kMaxStoredDecodeBytes);
  EXPECT_LE(fusebox::gateway::AnswerBody(answer).size(), std::size_t{32 * 1024});
  h.io.restart();
  std::optional<fusebox::gateway::CacheEntry> entry;
  net::co_spawn(h.io, h.cache->Get(kVin), [&](std::exception_ptr, auto got) { entry = got; });
  h.io.run();
  ASSERT_TRUE(entry);
  EXPECT_LE(entry->payload.size(), fusebox::gateway::kMaxStoredDecodeBytes);
  // The stored form reads back as the same decode (the bound holds across a restart).
  const std::optional<fusebox::gateway::Decode> back =
      fusebox::gateway::DeserializeDecode(entry->payload);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->vehicle, vehicle);
}

}  // namespace
