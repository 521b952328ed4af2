// Tests of the upstream modes with a capacity of their own (docs/scenario-format.md, rule 4):
// `queue` (servers and a FIFO line) and `refuse` (a refusal beyond the capacity), through the
// simulator, and the line itself (server_queue.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenario.h"
#include "server_queue.h"
#include "simulator.h"

namespace fusebox::sim {
namespace {

constexpr Micros kMs = 1000;

Scenario Build(const std::string& text) {
  auto file = LoadScenarioString(text, "test.toml");
  EXPECT_TRUE(file) << file.error().ToString();
  return file ? file->base() : Scenario{};
}

// Every call of the run, in the order they were admitted.
std::vector<CallRecord> CallsOf(const std::string& text) {
  SimOptions options;
  options.record_calls = true;
  auto run = Simulate(Build(text), options);
  EXPECT_TRUE(run) << run.error();
  if (!run) {
    return {};
  }
  std::vector<CallRecord> calls = run->calls;
  std::stable_sort(calls.begin(), calls.end(),
                   [](const CallRecord& a, const CallRecord& b) { return a.start < b.start; });
  return calls;
}

// One call at each of `starts` (milliseconds), as streams of one call each.
std::string OneCallEach(const std::vector<int>& starts) {
  std::string text;
  for (int start : starts) {
    text += "[[traffic.stream]]\nrate = 0.001\nstart = \"" + std::to_string(start) + "ms\"\n";
  }
  return text;
}

// The slot of the call StartNext gave a server, or kNobody.
constexpr std::uint32_t kNobody = 0xffffffff;

std::uint32_t SlotOf(const std::optional<ServerQueue::Call>& call) {
  return call ? call->slot : kNobody;
}

TEST(ServerQueueTest, ServesAtOnceWhileAServerIsFreeThenLinesUp) {
  ServerQueue queue;
  EXPECT_TRUE(queue.Join({.slot = 1, .deadline = 100, .service = 10}, 2));
  EXPECT_TRUE(queue.Join({.slot = 2, .deadline = 100, .service = 10}, 2));
  EXPECT_FALSE(queue.Join({.slot = 3, .deadline = 100, .service = 10}, 2));
  EXPECT_FALSE(queue.Join({.slot = 4, .deadline = 100, .service = 10}, 2));
  EXPECT_EQ(queue.busy(), 2U);
  EXPECT_EQ(queue.waiting(), 2U);
  EXPECT_EQ(SlotOf(queue.StartNext(10, 2)), kNobody);  // every server busy
  queue.Finish();
  EXPECT_EQ(SlotOf(queue.StartNext(10, 2)), 3U);  // first come, first served
  EXPECT_EQ(queue.busy(), 2U);
}

TEST(ServerQueueTest, ANewcomerWaitsBehindTheLineEvenWithAServerFree) {
  ServerQueue queue;
  EXPECT_TRUE(queue.Join({.slot = 1, .deadline = 100, .service = 10}, 1));
  EXPECT_FALSE(queue.Join({.slot = 2, .deadline = 100, .service = 10}, 1));
  // The capacity grew, but slot 2 has not been given the new server yet: 3 lines up behind it.
  EXPECT_FALSE(queue.Join({.slot = 3, .deadline = 100, .service = 10}, 3));
  EXPECT_EQ(SlotOf(queue.StartNext(5, 3)), 2U);
  EXPECT_EQ(SlotOf(queue.StartNext(5, 3)), 3U);
  EXPECT_EQ(SlotOf(queue.StartNext(5, 3)), kNobody);
}

TEST(ServerQueueTest, ACallWhoseBudgetRanOutIsNeverServed) {
  ServerQueue queue;
  EXPECT_TRUE(queue.Join({.slot = 1, .deadline = 100, .service = 10}, 1));
  EXPECT_FALSE(queue.Join({.slot = 2, .deadline = 50, .service = 10}, 1));
  EXPECT_FALSE(queue.Join({.slot = 3, .deadline = 80, .service = 10}, 1));
  queue.Finish();
  EXPECT_EQ(SlotOf(queue.StartNext(50, 1)), 3U);  // slot 2's deadline is now
  EXPECT_EQ(queue.waiting(), 0U);
}

TEST(ServerQueueTest, ALeavingCallGivesUpItsPlaceOnly) {
  ServerQueue queue;
  EXPECT_TRUE(queue.Join({.slot = 1, .deadline = 100, .service = 10}, 1));
  EXPECT_FALSE(queue.Join({.slot = 2, .deadline = 100, .service = 10}, 1));
  EXPECT_FALSE(queue.Join({.slot = 3, .deadline = 100, .service = 10}, 1));
  EXPECT_TRUE(queue.Leave(2));
  EXPECT_FALSE(queue.Leave(2));
  EXPECT_FALSE(queue.Leave(1));  // being served: not in line
  EXPECT_EQ(queue.busy(), 1U);   // leaving frees no server
  queue.Finish();
  EXPECT_EQ(SlotOf(queue.StartNext(20, 1)), 3U);
}

// One server, 100 ms a call, a call every 10 ms: each waits for the ones before it, in order,
// so each answers 90 ms later than the one before.
TEST(QueueModeTest, ServesInArrivalOrderAndLatencyGrowsWithTheLine) {
  const std::vector<CallRecord> calls = CallsOf(R"(
duration = "50ms"
[breaker]
call_timeout = "1s"
[traffic]
rate = 100
[[upstream.phase]]
from = 0
to = "10s"
mode = "queue"
capacity = 1
latency = "100ms"
)");
  ASSERT_EQ(calls.size(), 5U);
  for (std::size_t k = 0; k < calls.size(); ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(calls[k].start, static_cast<Micros>(k) * 10 * kMs);
    EXPECT_EQ(calls[k].end, static_cast<Micros>(k + 1) * 100 * kMs);
    EXPECT_EQ(calls[k].outcome, Outcome::kSuccess);
    EXPECT_EQ(calls[k].end - calls[k].start, (100 + 90 * static_cast<Micros>(k)) * kMs);
  }
}

TEST(QueueModeTest, ServesAsManyAtOnceAsItHasServers) {
  const std::vector<CallRecord> calls = CallsOf(R"(
duration = "40ms"
[traffic]
rate = 100
[[upstream.phase]]
from = 0
to = "10s"
mode = "queue"
capacity = 2
latency = "100ms"
)");
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_EQ(calls[0].end, 100 * kMs);
  EXPECT_EQ(calls[1].end, 110 * kMs);
  EXPECT_EQ(calls[2].end, 200 * kMs);  // the first free server
  EXPECT_EQ(calls[3].end, 210 * kMs);
}

// A 300 ms service under a 500 ms budget. Call 0 is served [0, 300). Call 1 is served from 300
// and times out at 510, but keeps its server until 600. Call 2 waits until its budget runs out at
// 520 and leaves the line. Call 3 (550 ms) finds the line empty and the server still busy with
// call 1: it is served from 600, not behind call 2, and not from 550.
TEST(QueueModeTest, ATimedOutCallLeavesTheLineAndAServedOneKeepsItsServer) {
  const std::vector<CallRecord> calls = CallsOf(R"(
duration = "1s"
[breaker]
failure_threshold = 100
call_timeout = "500ms"
[[upstream.phase]]
from = 0
to = "10s"
mode = "queue"
capacity = 1
latency = "300ms"
)" + OneCallEach({0, 10, 20, 550}));
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_EQ(calls[0].outcome, Outcome::kSuccess);
  EXPECT_EQ(calls[0].end, 300 * kMs);
  EXPECT_EQ(calls[1].outcome, Outcome::kTimeout);
  EXPECT_EQ(calls[1].end, 510 * kMs);
  EXPECT_EQ(calls[2].outcome, Outcome::kTimeout);
  EXPECT_EQ(calls[2].end, 520 * kMs);
  EXPECT_EQ(calls[3].outcome, Outcome::kSuccess);
  EXPECT_EQ(calls[3].end, 900 * kMs);
}

TEST(QueueModeTest, TimeoutsInTheLineAreCountedAsTimeouts) {
  SimOptions options;
  auto run = Simulate(Build(R"(
duration = "1s"
[breaker]
failure_threshold = 100
call_timeout = "500ms"
[[upstream.phase]]
from = 0
to = "10s"
mode = "queue"
capacity = 1
latency = "300ms"
)" + OneCallEach({0, 10, 20, 550})),
                      options);
  ASSERT_TRUE(run) << run.error();
  EXPECT_EQ(run->counters.succeeded, 2U);
  EXPECT_EQ(run->counters.timeouts, 2U);
  EXPECT_EQ(run->counters.failed, 2U);
  EXPECT_EQ(run->end, 900 * kMs);
}

// One server until 100 ms, three from then: the calls waiting at 100 ms stay in line and two of
// them are served at once; the third waits for the first server to free (200 ms). Each call's
// service is the latency of the phase that admitted it.
TEST(QueueModeTest, WaitingCallsStayInLineWhenTheCapacityChanges) {
  const std::vector<CallRecord> calls = CallsOf(R"(
duration = "40ms"
[breaker]
call_timeout = "1s"
[traffic]
rate = 100
[[upstream.phase]]
from = 0
to = "100ms"
mode = "queue"
capacity = 1
latency = "200ms"
[[upstream.phase]]
from = "100ms"
to = "10s"
mode = "queue"
capacity = 3
latency = "50ms"
)");
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_EQ(calls[0].end, 200 * kMs);
  EXPECT_EQ(calls[1].end, 300 * kMs);
  EXPECT_EQ(calls[2].end, 300 * kMs);
  EXPECT_EQ(calls[3].end, 400 * kMs);
}

// Three servers, then one from 50 ms: the calls being served finish, and the line moves only once
// fewer than one serve.
TEST(QueueModeTest, AShrinkingCapacityLetsTheServedCallsFinish) {
  const std::vector<CallRecord> calls = CallsOf(R"(
duration = "80ms"
[breaker]
call_timeout = "1s"
[traffic]
rate = 50
[[upstream.phase]]
from = 0
to = "50ms"
mode = "queue"
capacity = 3
latency = "100ms"
[[upstream.phase]]
from = "50ms"
to = "10s"
mode = "queue"
capacity = 1
latency = "100ms"
)");
  // Arrivals at 0, 20, 40 (served at once) and 60 ms (in line under one server).
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_EQ(calls[0].end, 100 * kMs);
  EXPECT_EQ(calls[1].end, 120 * kMs);
  EXPECT_EQ(calls[2].end, 140 * kMs);
  EXPECT_EQ(calls[3].end, 240 * kMs);  // starts when the last of the three ends
}

// After the last queue phase the calls still in line drain at its capacity; a call admitted after
// it is the healthy upstream's (20 ms), in no line.
TEST(QueueModeTest, TheLineDrainsAfterTheQueuePhaseEnds) {
  const std::vector<CallRecord> calls = CallsOf(R"(
duration = "40ms"
[breaker]
call_timeout = "1s"
[traffic]
rate = 100
[[upstream.phase]]
from = 0
to = "30ms"
mode = "queue"
capacity = 1
latency = "100ms"
)");
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_EQ(calls[1].end, 200 * kMs);
  EXPECT_EQ(calls[2].end, 300 * kMs);
  EXPECT_EQ(calls[3].start, 30 * kMs);
  EXPECT_EQ(calls[3].end, 50 * kMs);
}

// Two calls in flight at most: the third and fourth are refused at once, a failure the breaker
// counts (three failures in a row trip it).
TEST(RefuseModeTest, RefusesAtOnceBeyondTheCapacity) {
  SimOptions options;
  options.record_calls = true;
  auto run = Simulate(Build(R"(
duration = "50ms"
[breaker]
failure_threshold = 3
[traffic]
rate = 100
[[upstream.phase]]
from = 0
to = "10s"
mode = "refuse"
capacity = 2
latency = "100ms"
)"),
                      options);
  ASSERT_TRUE(run) << run.error();
  const Counters& c = run->counters;
  EXPECT_EQ(c.allowed, 5U);
  EXPECT_EQ(c.succeeded, 2U);
  EXPECT_EQ(c.refused, 3U);
  EXPECT_EQ(c.failed, 3U);
  EXPECT_EQ(c.max_in_flight, 3U);  // a refused call is in flight for an instant
  ASSERT_FALSE(run->transitions.empty());
  EXPECT_EQ(run->transitions.front().to, State::kOpen);
  EXPECT_EQ(run->transitions.front().t, 40 * kMs);  // the third refusal
  for (const CallRecord& call : run->calls) {
    if (call.refused) {
      EXPECT_EQ(call.end, call.start);
      EXPECT_EQ(call.outcome, Outcome::kFailure);
    }
  }
}

TEST(RefuseModeTest, ServesAgainOnceACallHasEnded) {
  SimOptions options;
  auto run = Simulate(Build(R"(
duration = "1s"
[breaker]
failure_threshold = 100
[traffic]
rate = 20
[[upstream.phase]]
from = 0
to = "10s"
mode = "refuse"
capacity = 1
latency = "100ms"
)"),
                      options);
  ASSERT_TRUE(run) << run.error();
  // A call every 50 ms, 100 ms each: every other call finds one in flight.
  EXPECT_EQ(run->counters.succeeded, 10U);
  EXPECT_EQ(run->counters.refused, 10U);
}

}  // namespace
}  // namespace fusebox::sim
