#include "fusebox/single_flight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "fusebox/status.h"

namespace {

using fusebox::FlightError;
using fusebox::ReasonCode;
using Flights = fusebox::SingleFlight<std::string, std::string>;
using Leader = Flights::Leader;
using Follower = Flights::Follower;

Leader AsLeader(Flights::Joined joined) {
  EXPECT_TRUE(std::holds_alternative<Leader>(joined));
  return std::get<Leader>(std::move(joined));
}

Follower AsFollower(Flights::Joined joined) {
  EXPECT_TRUE(std::holds_alternative<Follower>(joined));
  return std::get<Follower>(std::move(joined));
}

// A deadline that has certainly passed (the steady clock's epoch), without reading the clock.
constexpr std::chrono::steady_clock::time_point kPast{};

TEST(SingleFlightTest, FirstCallerLeadsAndLaterCallersFollow) {
  Flights flights;
  auto first = flights.Join("vin");
  auto second = flights.Join("vin");
  EXPECT_TRUE(std::holds_alternative<Leader>(first));
  EXPECT_TRUE(std::holds_alternative<Follower>(second));
  EXPECT_EQ(flights.executed(), 1U);
  EXPECT_EQ(flights.shared(), 1U);
  EXPECT_EQ(flights.in_flight(), 1U);
}

TEST(SingleFlightTest, FollowersGetThePublishedValue) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower a = AsFollower(flights.Join("vin"));
  Follower b = AsFollower(flights.Join("vin"));
  EXPECT_FALSE(a.ready());

  leader.Publish("decoded");
  EXPECT_TRUE(a.ready());
  auto ra = a.Wait();
  auto rb = b.Wait();
  ASSERT_TRUE(ra.has_value());
  ASSERT_TRUE(rb.has_value());
  EXPECT_EQ(*ra, "decoded");
  EXPECT_EQ(*rb, "decoded");
  EXPECT_FALSE(leader.pending());
}

TEST(SingleFlightTest, NConcurrentCallersShareOneExecution) {
  constexpr int kCallers = 16;
  Flights flights;
  // Hold the flight open as its leader so every thread below joins it as a follower.
  Leader leader = AsLeader(flights.Join("vin"));
  std::atomic<int> executions{0};  // only a leader would touch it
  std::vector<std::optional<Flights::FlightResult>> results(kCallers);
  std::vector<std::thread> threads;
  threads.reserve(kCallers);
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      results[static_cast<std::size_t>(i)] = flights.Do("vin", [&] {
        ++executions;
        return std::string("second execution");
      });
    });
  }
  // Publish only once every caller has joined (a condition, not a guessed sleep).
  while (flights.shared() < kCallers) {
    std::this_thread::yield();
  }
  leader.Publish("decoded");
  for (auto& thread : threads) {
    thread.join();
  }

  EXPECT_EQ(executions.load(), 0);
  EXPECT_EQ(flights.executed(), 1U);
  EXPECT_EQ(flights.shared(), static_cast<std::uint64_t>(kCallers));
  for (const auto& result : results) {
    ASSERT_TRUE(result.has_value());
    ASSERT_TRUE(result->has_value());
    EXPECT_EQ(**result, "decoded");
  }
}

TEST(SingleFlightTest, DoRunsTheWorkOnceForTheLeaderAndReturnsIt) {
  Flights flights;
  int executions = 0;
  auto result = flights.Do("vin", [&] {
    ++executions;
    return std::string("decoded");
  });
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, "decoded");
  EXPECT_EQ(executions, 1);
  EXPECT_EQ(flights.executed(), 1U);
  EXPECT_EQ(flights.shared(), 0U);
}

TEST(SingleFlightTest, FollowerJoiningDuringDoGetsTheLeadersValue) {
  Flights flights;
  std::optional<Follower> follower;
  auto result = flights.Do("vin", [&] {
    follower = AsFollower(flights.Join("vin"));  // arrives while the work runs
    return std::string("decoded");
  });
  ASSERT_TRUE(result.has_value());
  ASSERT_TRUE(follower.has_value());
  auto shared = follower->Wait();
  ASSERT_TRUE(shared.has_value());
  EXPECT_EQ(*shared, "decoded");
}

TEST(SingleFlightTest, AFlightEndsWhenPublishedSoTheNextCallerRunsAgain) {
  Flights flights;
  AsLeader(flights.Join("vin")).Publish("first");
  EXPECT_EQ(flights.in_flight(), 0U);
  EXPECT_TRUE(std::holds_alternative<Leader>(flights.Join("vin")));
  EXPECT_EQ(flights.executed(), 2U);
}

TEST(SingleFlightTest, DifferentKeysAreIndependent) {
  Flights flights;
  Leader a = AsLeader(flights.Join("vin-a"));
  Leader b = AsLeader(flights.Join("vin-b"));
  Follower follower_b = AsFollower(flights.Join("vin-b"));
  EXPECT_EQ(flights.in_flight(), 2U);

  a.Publish("a");
  EXPECT_FALSE(follower_b.ready());  // a's publication is not b's
  EXPECT_EQ(flights.in_flight(), 1U);
  b.Publish("b");
  auto result = follower_b.Wait();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, "b");
  EXPECT_EQ(flights.executed(), 2U);
  EXPECT_EQ(flights.shared(), 1U);
}

TEST(SingleFlightTest, FollowerLeavingByStopTokenDoesNotCancelTheFlight) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower leaving = AsFollower(flights.Join("vin"));
  Follower staying = AsFollower(flights.Join("vin"));
  std::stop_source stop;
  std::optional<Flights::FlightResult> left;
  std::thread waiter([&] { left = leaving.Wait({.stop_token = stop.get_token()}); });
  stop.request_stop();
  waiter.join();

  ASSERT_TRUE(left.has_value());
  ASSERT_FALSE(left->has_value());
  EXPECT_EQ(left->error(), FlightError::kCancelled);
  EXPECT_TRUE(leader.pending());  // the flight goes on
  EXPECT_EQ(flights.in_flight(), 1U);

  leader.Publish("decoded");
  auto result = staying.Wait();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, "decoded");
}

TEST(SingleFlightTest, FollowerLeavesAtItsDeadlineAndOthersStillGetTheResult) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower impatient = AsFollower(flights.Join("vin"));
  Follower patient = AsFollower(flights.Join("vin"));

  auto left = impatient.Wait({.deadline = kPast});
  ASSERT_FALSE(left.has_value());
  EXPECT_EQ(left.error(), FlightError::kDeadlineExceeded);

  leader.Publish("decoded");
  auto result = patient.Wait({.deadline = kPast});  // a published result wins over a deadline
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, "decoded");
}

TEST(SingleFlightTest, FollowerThatLeftCanStillReadTheResultLater) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower follower = AsFollower(flights.Join("vin"));
  ASSERT_FALSE(follower.Wait({.deadline = kPast}).has_value());
  leader.Publish("decoded");
  auto result = follower.Wait();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, "decoded");
}

TEST(SingleFlightTest, LeaderWhoseWorkThrowsGivesFollowersLeaderFailed) {
  Flights flights;
  std::optional<Follower> follower;
  EXPECT_THROW((void)flights.Do("vin",
                                [&]() -> std::string {
                                  follower = AsFollower(flights.Join("vin"));
                                  throw std::runtime_error("boom");
                                }),
               std::runtime_error);
  ASSERT_TRUE(follower.has_value());
  auto result = follower->Wait();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error(), FlightError::kLeaderFailed);
  EXPECT_EQ(flights.in_flight(), 0U);
}

TEST(SingleFlightTest, LeaderFailGivesFollowersLeaderFailed) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower follower = AsFollower(flights.Join("vin"));
  leader.Fail();
  auto result = follower.Wait();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error(), FlightError::kLeaderFailed);
}

TEST(SingleFlightTest, LeaderDroppedWithoutPublishingGivesFollowersLeaderAbandoned) {
  Flights flights;
  std::optional<Leader> leader = AsLeader(flights.Join("vin"));
  Follower follower = AsFollower(flights.Join("vin"));
  std::optional<Flights::FlightResult> result;
  std::thread waiter([&] { result = follower.Wait(); });  // no deadline: must not hang
  leader.reset();
  waiter.join();

  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->has_value());
  EXPECT_EQ(result->error(), FlightError::kLeaderAbandoned);
  EXPECT_EQ(flights.in_flight(), 0U);
  EXPECT_TRUE(std::holds_alternative<Leader>(flights.Join("vin")));  // the next caller leads
}

TEST(SingleFlightTest, AbandonLetsAFollowerJoinAgainAndLead) {
  Flights flights;
  Leader refused = AsLeader(flights.Join("vin"));
  Follower follower = AsFollower(flights.Join("vin"));
  refused.Abandon();
  auto result = follower.Wait();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error(), FlightError::kLeaderAbandoned);
  EXPECT_FALSE(refused.pending());
  EXPECT_TRUE(std::holds_alternative<Leader>(flights.Join("vin")));
  EXPECT_EQ(flights.executed(), 2U);
}

TEST(SingleFlightTest, MoveAssigningOverAPendingLeaderAbandonsItsFlight) {
  Flights flights;
  Leader a = AsLeader(flights.Join("vin-a"));
  Follower follower_a = AsFollower(flights.Join("vin-a"));
  Leader b = AsLeader(flights.Join("vin-b"));
  a = std::move(b);
  auto result = follower_a.Wait();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error(), FlightError::kLeaderAbandoned);
  EXPECT_EQ(a.key(), "vin-b");
  EXPECT_TRUE(a.pending());
}

TEST(SingleFlightTest, MovedLeaderPublishesOnceAndMovedFromAbandonsNothing) {
  Flights flights;
  Follower follower = [&] {
    Leader leader = AsLeader(flights.Join("vin"));
    Follower f = AsFollower(flights.Join("vin"));
    Leader moved(std::move(leader));
    EXPECT_FALSE(leader.pending());  // NOLINT(bugprone-use-after-move): checking the moved-from
    moved.Publish("decoded");
    return f;
  }();  // the moved-from leader is destroyed here and must not overwrite the result
  auto result = follower.Wait();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, "decoded");
}

TEST(SingleFlightTest, SecondPublishIsIgnored) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower follower = AsFollower(flights.Join("vin"));
  leader.Publish("first");
  leader.Publish("second");
  leader.Fail();
  auto result = follower.Wait();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, "first");
}

TEST(SingleFlightTest, OnReadyBeforePublishRunsOnPublish) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower follower = AsFollower(flights.Join("vin"));
  std::optional<std::string> seen;
  follower.OnReady([&](const Flights::FlightResult& r) { seen = *r; });
  EXPECT_FALSE(seen.has_value());
  leader.Publish("decoded");
  EXPECT_EQ(seen, "decoded");
}

TEST(SingleFlightTest, OnReadyAfterPublishRunsAtOnce) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower follower = AsFollower(flights.Join("vin"));
  leader.Publish("decoded");
  std::optional<std::string> seen;
  follower.OnReady([&](const Flights::FlightResult& r) { seen = *r; });
  EXPECT_EQ(seen, "decoded");
}

TEST(SingleFlightTest, OnReadyAcceptsMoveOnlyCallbacksAndRunsEachOnce) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower follower = AsFollower(flights.Join("vin"));
  int runs = 0;
  auto token = std::make_unique<int>(7);
  follower.OnReady([&runs, token = std::move(token)](const Flights::FlightResult& r) {
    EXPECT_TRUE(r.has_value());
    runs += *token;
  });
  follower.OnReady([&runs](const Flights::FlightResult&) { runs += 1; });
  leader.Publish("decoded");
  leader.Publish("again");
  EXPECT_EQ(runs, 8);
}

TEST(SingleFlightTest, OnReadyGetsLeaderAbandoned) {
  Flights flights;
  std::optional<Leader> leader = AsLeader(flights.Join("vin"));
  Follower follower = AsFollower(flights.Join("vin"));
  std::optional<FlightError> seen;
  follower.OnReady([&](const Flights::FlightResult& r) {
    if (!r) {
      seen = r.error();
    }
  });
  leader.reset();
  EXPECT_EQ(seen, FlightError::kLeaderAbandoned);
}

TEST(SingleFlightTest, LeadersCallerCanWaitAsAFollowerAndLeaveWhileTheWorkGoesOn) {
  Flights flights;
  Leader leader = AsLeader(flights.Join("vin"));
  Follower own = leader.follower();
  Follower other = AsFollower(flights.Join("vin"));
  Leader worker = std::move(leader);  // handed to whoever runs the work

  auto left = own.Wait({.deadline = kPast});
  ASSERT_FALSE(left.has_value());
  EXPECT_EQ(left.error(), FlightError::kDeadlineExceeded);

  worker.Publish("decoded");
  auto result = other.Wait();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, "decoded");
}

TEST(SingleFlightTest, ErrorsMapToReasonCodesAndNames) {
  EXPECT_EQ(fusebox::ToReasonCode(FlightError::kLeaderFailed), ReasonCode::kUpstreamError);
  EXPECT_EQ(fusebox::ToReasonCode(FlightError::kLeaderAbandoned), ReasonCode::kUpstreamError);
  EXPECT_EQ(fusebox::ToReasonCode(FlightError::kDeadlineExceeded), ReasonCode::kUpstreamSlow);
  EXPECT_EQ(fusebox::ToReasonCode(FlightError::kCancelled), ReasonCode::kCancelled);
  EXPECT_EQ(fusebox::ToString(FlightError::kLeaderFailed), "LEADER_FAILED");
  EXPECT_EQ(fusebox::ToString(FlightError::kLeaderAbandoned), "LEADER_ABANDONED");
  EXPECT_EQ(fusebox::ToString(FlightError::kDeadlineExceeded), "DEADLINE_EXCEEDED");
  EXPECT_EQ(fusebox::ToString(FlightError::kCancelled), "CANCELLED");
}

}  // namespace
