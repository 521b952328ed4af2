#include "common/duration.h"
#include "fault_engine.h"
#include "fault_json.h"
#include "schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <boost/json/serialize.hpp>

namespace fusebox::vpic_sim {
namespace {

FaultSpec MustParse(std::string_view json) {
  auto spec = ParseFaultJson(json);
  EXPECT_TRUE(spec.has_value()) << (spec ? "" : spec.error().message);
  return spec ? *spec : FaultSpec{};
}

std::string ErrorField(std::string_view json) {
  auto spec = ParseFaultJson(json);
  return spec ? std::string("<no error>") : spec.error().field;
}

// The command-line duration grammar vpic-sim's flags use (common/duration.h).
std::optional<Micros> ParseDuration(std::string_view text) {
  auto micros = app::ParseDuration(text);
  return micros ? std::optional<Micros>(*micros) : std::nullopt;
}

Schedule MustSchedule(std::string_view toml) {
  auto schedule = ParseSchedule(toml, "test.toml");
  EXPECT_TRUE(schedule.has_value()) << (schedule ? "" : schedule.error().message);
  return schedule ? *schedule : Schedule{};
}

// ---- control JSON ----

TEST(FaultJsonTest, ParsesErrorWithStatus) {
  const FaultSpec spec = MustParse(R"({"mode":"error","status":502})");
  EXPECT_EQ(spec.mode, FaultMode::kError);
  EXPECT_EQ(spec.status, 502);
  EXPECT_EQ(spec.retry_after_s, std::nullopt);
}

TEST(FaultJsonTest, ParsesSlowWithLatencyInMilliseconds) {
  const FaultSpec spec = MustParse(R"({"mode":"slow","latency_ms":8000})");
  EXPECT_EQ(spec.mode, FaultMode::kSlow);
  EXPECT_EQ(spec.latency.value, 8 * kMicrosPerSecond);
}

TEST(FaultJsonTest, SlowDefaultsToFiveSeconds) {
  EXPECT_EQ(MustParse(R"({"mode":"slow"})").latency.value, 5 * kMicrosPerSecond);
}

TEST(FaultJsonTest, TooManyRequestsDefaultsRetryAfterToOneSecond) {
  EXPECT_EQ(MustParse(R"({"mode":"error","status":429})").retry_after_s, 1);
  EXPECT_EQ(MustParse(R"({"mode":"error","status":429,"retry_after_s":30})").retry_after_s, 30);
}

TEST(FaultJsonTest, FragileIsCapacityWithRelapse) {
  const FaultSpec spec = MustParse(R"({"mode":"fragile","capacity":2})");
  EXPECT_EQ(spec.mode, FaultMode::kCapacity);
  EXPECT_EQ(spec.capacity, 2);
  EXPECT_EQ(spec.relapse, 5 * kMicrosPerSecond);
}

TEST(FaultJsonTest, QueueTakesCapacityAndAnOptionalBound) {
  const FaultSpec unbounded = MustParse(R"({"mode":"queue","capacity":4,"latency_ms":50})");
  EXPECT_EQ(unbounded.mode, FaultMode::kQueue);
  EXPECT_EQ(unbounded.capacity, 4);
  EXPECT_EQ(unbounded.latency.value, 50 * kMicrosPerMilli);
  EXPECT_EQ(unbounded.queue_limit, std::nullopt);
  EXPECT_EQ(MustParse(R"({"mode":"queue","queue_limit":0})").queue_limit, 0);
  EXPECT_EQ(MustParse(R"({"mode":"queue","queue_limit":100})").queue_limit, 100);
  EXPECT_EQ(ErrorField(R"({"mode":"queue","queue_limit":-1})"), "queue_limit");
  EXPECT_EQ(ErrorField(R"({"mode":"queue","queue_limit":1000001})"), "queue_limit");
  EXPECT_EQ(ErrorField(R"({"mode":"queue","capacity":0})"), "capacity");
}

TEST(FaultJsonTest, MinAndMaxAloneMeanUniform) {
  const FaultSpec spec = MustParse(R"({"mode":"slow","latency_min_ms":10,"latency_max_ms":20})");
  EXPECT_EQ(spec.latency.dist, LatencyDist::kUniform);
  EXPECT_EQ(spec.latency.min, 10 * kMicrosPerMilli);
  EXPECT_EQ(spec.latency.max, 20 * kMicrosPerMilli);
}

TEST(FaultJsonTest, BadJsonNamesTheBody) { EXPECT_EQ(ErrorField("{\"mode\":"), "body"); }

TEST(FaultJsonTest, NonObjectNamesTheBody) { EXPECT_EQ(ErrorField("[1]"), "body"); }

TEST(FaultJsonTest, MissingModeNamesMode) { EXPECT_EQ(ErrorField(R"({"status":503})"), "mode"); }

TEST(FaultJsonTest, UnknownModeNamesMode) {
  EXPECT_EQ(ErrorField(R"({"mode":"explode"})"), "mode");
}

TEST(FaultJsonTest, UnknownFieldIsNamed) {
  EXPECT_EQ(ErrorField(R"({"mode":"error","statsu":503})"), "statsu");
}

TEST(FaultJsonTest, WrongTypeNamesTheField) {
  EXPECT_EQ(ErrorField(R"({"mode":"error","status":"503"})"), "status");
  EXPECT_EQ(ErrorField(R"({"mode":"slow","latency_ms":"8s"})"), "latency_ms");
  EXPECT_EQ(ErrorField(R"({"mode":7})"), "mode");
}

TEST(FaultJsonTest, OutOfRangeNamesTheField) {
  EXPECT_EQ(ErrorField(R"({"mode":"error","status":418})"), "status");
  EXPECT_EQ(ErrorField(R"({"mode":"flap","every":0})"), "every");
  EXPECT_EQ(ErrorField(R"({"mode":"capacity","capacity":0})"), "capacity");
  EXPECT_EQ(ErrorField(R"({"mode":"slow","latency_ms":-1})"), "latency_ms");
  EXPECT_EQ(ErrorField(R"({"mode":"drip","drip_interval_ms":0})"), "drip_interval_ms");
  EXPECT_EQ(ErrorField(R"({"mode":"slow","latency_dist":"uniform","latency_min_ms":9,)"
                       R"("latency_max_ms":5})"),
            "latency_max_ms");
}

TEST(FaultJsonTest, RepeatedKeyIsRefusedNamingIt) {
  auto spec = ParseFaultJson(R"({"mode":"ok","mode":"hang"})");
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().field, "mode");
  EXPECT_NE(spec.error().message.find("more than once"), std::string::npos) << spec.error().message;
  // Spelled differently, the same key.
  EXPECT_EQ(ErrorField(R"({"mode":"error","status":503,"st\u0061tus":502})"), "status");
  // The same name in different objects, or inside a string value, is not a repeat.
  EXPECT_EQ(ErrorField(R"({"mode":"error","status":503,"latency_dist":"{\"mode\":1}"})"),
            "latency_dist");
  EXPECT_TRUE(ParseFaultJson(R"({"mode":"slow", "latency_ms":10})").has_value());
}

TEST(FaultJsonTest, ErrorMessageNamesFieldAndRange) {
  auto spec = ParseFaultJson(R"({"mode":"error","status":418})");
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().message, "status must be one of 429, 500, 502, 503, 504, got 418");
}

TEST(FaultJsonTest, ToJsonReadsBack) {
  const FaultSpec spec = MustParse(
      R"({"mode":"slow","latency_dist":"lognormal","latency_ms":250.5,"latency_sigma":0.25,)"
      R"("latency_max_ms":4000,"status":429,"retry_after_s":7,"every":3,"capacity":9,)"
      R"("relapse_ms":1500,"drip_bytes":2,"drip_interval_ms":100})");
  const std::string json = boost::json::serialize(FaultSpecToJson(spec));
  EXPECT_EQ(MustParse(json), spec) << json;
  // An unset bound stays unset; a set one reads back.
  for (const std::string_view text :
       {R"({"mode":"queue","capacity":3})", R"({"mode":"queue","capacity":3,"queue_limit":7})"}) {
    const FaultSpec queue = MustParse(text);
    const std::string queue_json = boost::json::serialize(FaultSpecToJson(queue));
    EXPECT_EQ(MustParse(queue_json), queue) << queue_json;
  }
}

// ---- durations ----

TEST(DurationTest, ParsesUnitsAndPlainSeconds) {
  EXPECT_EQ(ParseDuration("250ms"), 250'000);
  EXPECT_EQ(ParseDuration("23.3s"), 23'300'000);
  EXPECT_EQ(ParseDuration("2m"), 120'000'000);
  EXPECT_EQ(ParseDuration("300us"), 300);
  EXPECT_EQ(ParseDuration("1.5"), 1'500'000);
  EXPECT_EQ(ParseDuration("5h"), 18'000'000'000);
  EXPECT_EQ(ParseDuration("2m30s"), 150'000'000);
}

TEST(DurationTest, RejectsMalformedAndNegative) {
  EXPECT_EQ(ParseDuration(""), std::nullopt);
  EXPECT_EQ(ParseDuration("ms"), std::nullopt);
  EXPECT_EQ(ParseDuration("-1s"), std::nullopt);
  EXPECT_EQ(ParseDuration("5w"), std::nullopt);
  EXPECT_EQ(ParseDuration("30s2m"), std::nullopt);
  EXPECT_EQ(ParseDuration("1e400"), std::nullopt);
}

// ---- schedules ----

TEST(ScheduleTest, ParsesPhasesInTimeOrder) {
  const Schedule s = MustSchedule(R"(
[[upstream.phase]]
from = "20s"
to = "30s"
mode = "slow"
latency = "8s"

[[upstream.phase]]
from = 10
to = "20s"
mode = "error"
status = 502
)");
  ASSERT_EQ(s.phases.size(), 2U);
  EXPECT_EQ(s.phases[0].from, 10 * kMicrosPerSecond);
  EXPECT_EQ(s.phases[0].spec.mode, FaultMode::kError);
  EXPECT_EQ(s.phases[0].spec.status, 502);
  EXPECT_EQ(s.phases[1].spec.latency.value, 8 * kMicrosPerSecond);
}

TEST(ScheduleTest, AcceptsAWholeSimulatorScenario) {
  const Schedule s = MustSchedule(R"(
seed = 42
duration = "90s"
[breaker]
trip = "consecutive"
[traffic]
rate = 1.0
[limit]
max_in_flight = "auto"
[upstream]
latency = "20ms"
[[upstream.phase]]
from = "10s"
to = "60s"
mode = "fragile"
capacity = 1
relapse = "5s"
)");
  ASSERT_EQ(s.phases.size(), 1U);
  EXPECT_EQ(s.healthy_latency, 20'000);
  EXPECT_EQ(s.phases[0].spec.mode, FaultMode::kCapacity);
  EXPECT_EQ(s.phases[0].spec.relapse, 5 * kMicrosPerSecond);
}

TEST(ScheduleTest, ReadsAQueuePhase) {
  const Schedule s = MustSchedule(
      "[[upstream.phase]]\nfrom = 0\nto = 60\nmode = \"queue\"\ncapacity = 16\n"
      "queue_limit = 200\nlatency = \"80ms\"\n");
  ASSERT_EQ(s.phases.size(), 1U);
  EXPECT_EQ(s.phases[0].spec.mode, FaultMode::kQueue);
  EXPECT_EQ(s.phases[0].spec.capacity, 16);
  EXPECT_EQ(s.phases[0].spec.queue_limit, 200);
  EXPECT_EQ(s.phases[0].spec.latency.value, 80 * kMicrosPerMilli);
}

TEST(ScheduleTest, PhaseAtCoversFromButNotTo) {
  const Schedule s = MustSchedule("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"hang\"\n");
  EXPECT_EQ(s.PhaseAt(999'999), nullptr);
  EXPECT_NE(s.PhaseAt(1'000'000), nullptr);
  EXPECT_EQ(s.PhaseAt(2'000'000), nullptr);
}

TEST(ScheduleTest, UnknownPhaseKeyIsNamedWithItsLine) {
  auto s =
      ParseSchedule("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"ok\"\nlatnecy = 3\n", "f.toml");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().field, "upstream.phase[0].latnecy");
  EXPECT_NE(s.error().message.find("f.toml:5:"), std::string::npos) << s.error().message;
}

// Every schedule error points at file:line:column of the offending value.
std::string ScheduleError(std::string_view toml) {
  auto s = ParseSchedule(toml, "bad.toml");
  return s ? std::string("<no error>") : s.error().message;
}

TEST(ScheduleTest, FaultFieldErrorsPointAtTheValue) {
  EXPECT_TRUE(ScheduleError("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"bogus\"\n")
                  .starts_with("bad.toml:4:8: upstream.phase[0].mode: "));
  EXPECT_TRUE(ScheduleError("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"error\"\n"
                            "status = 418\n")
                  .starts_with("bad.toml:5:10: upstream.phase[0].status: "));
  EXPECT_TRUE(ScheduleError("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"slow\"\n"
                            "latency = \"7200s\"\n")
                  .starts_with("bad.toml:5:11: upstream.phase[0].latency: "));
  EXPECT_TRUE(ScheduleError("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"flap\"\n"
                            "every = 0\n")
                  .starts_with("bad.toml:5:9: upstream.phase[0].every: "));
  EXPECT_TRUE(ScheduleError("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"error\"\n"
                            "status = 429\nretry_after = \"200000s\"\n")
                  .starts_with("bad.toml:6:15: upstream.phase[0].retry_after: "));
  // Second phase: its own lines.
  EXPECT_TRUE(ScheduleError("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"ok\"\n\n"
                            "[[upstream.phase]]\nfrom = 3\nto = 4\nmode = \"nope\"\n")
                  .starts_with("bad.toml:9:8: upstream.phase[1].mode: "));
}

TEST(ScheduleTest, MissingUniformMaximumPointsAtTheDistribution) {
  EXPECT_TRUE(ScheduleError("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"slow\"\n"
                            "latency_dist = \"uniform\"\n")
                  .starts_with("bad.toml:5:16: upstream.phase[0].latency_max: "));
}

TEST(ScheduleTest, ToNotAfterFromPointsAtTo) {
  EXPECT_TRUE(ScheduleError("[[upstream.phase]]\nmode = \"hang\"\nfrom = 2\nto = 1\n")
                  .starts_with("bad.toml:4:6: upstream.phase[0].to: "));
}

TEST(ScheduleTest, MissingKeyPointsAtThePhaseHeader) {
  EXPECT_TRUE(ScheduleError("seed = 1\n\n[[upstream.phase]]\nfrom = 1\nmode = \"hang\"\n")
                  .starts_with("bad.toml:3:1: upstream.phase[0]: missing key: to"));
}

TEST(ScheduleTest, OverlapPointsAtTheLaterPhasesFrom) {
  const std::string in_order = ScheduleError(
      "[[upstream.phase]]\nfrom = \"1s\"\nto = \"3s\"\nmode = \"hang\"\n\n"
      "[[upstream.phase]]\nfrom = \"2s\"\nto = \"4s\"\nmode = \"ok\"\n");
  EXPECT_TRUE(
      in_order.starts_with("bad.toml:7:8: upstream.phase[1].from: phase [2.0 s, 4.0 s) overlaps "
                           "upstream.phase[0] [1.0 s, 3.0 s)"))
      << in_order;
  // Written in the other order: the phase later in the file is still the one named (as in
  // fusebox-sim: one rule for both tools).
  const std::string reversed = ScheduleError(
      "[[upstream.phase]]\nfrom = 2\nto = 4\nmode = \"ok\"\n"
      "[[upstream.phase]]\nfrom = 1\nto = 3\nmode = \"hang\"\n");
  EXPECT_TRUE(
      reversed.starts_with("bad.toml:6:8: upstream.phase[1].from: phase [1.0 s, 3.0 s) overlaps "
                           "upstream.phase[0] [2.0 s, 4.0 s)"))
      << reversed;
}

TEST(ScheduleFileTest, DirectoryIsRefused) {
  auto s = LoadScheduleFile("/tmp");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message, "/tmp: is a directory, not a schedule file (a TOML file)");
}

TEST(ScheduleFileTest, UnreadableFileIsRefusedWithTheReason) {
  // Opens (for any user), then read(2) fails with EIO: nothing is mapped at address 0.
  auto s = LoadScheduleFile("/proc/self/mem");
  ASSERT_FALSE(s.has_value());
  EXPECT_TRUE(s.error().message.starts_with("/proc/self/mem: cannot read the schedule file: "))
      << s.error().message;
  auto missing = LoadScheduleFile("/nonexistent/schedule.toml");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message,
            "/nonexistent/schedule.toml: cannot open the schedule file: No such file or "
            "directory");
}

TEST(ScheduleTest, BadValueIsNamed) {
  auto s = ParseSchedule("[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"error\"\nstatus = 200\n",
                         "f.toml");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().field, "upstream.phase[0].status");
}

TEST(ScheduleTest, OverlappingPhasesAreRefused) {
  auto s = ParseSchedule(
      "[[upstream.phase]]\nfrom = 1\nto = 3\nmode = \"hang\"\n"
      "[[upstream.phase]]\nfrom = 2\nto = 4\nmode = \"ok\"\n",
      "f.toml");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("overlap"), std::string::npos);
}

TEST(ScheduleTest, EmptyPhaseIsRefused) {
  auto s = ParseSchedule("[[upstream.phase]]\nfrom = 2\nto = 2\nmode = \"hang\"\n", "f.toml");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().field, "upstream.phase[0].to");
}

TEST(ScheduleTest, UnknownTopLevelKeyIsRefused) {
  auto s = ParseSchedule("[[phase]]\nfrom = 1\nto = 2\nmode = \"ok\"\n", "f.toml");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().field, "phase");
}

TEST(ScheduleTest, TomlSyntaxErrorNamesTheLine) {
  auto s = ParseSchedule("[[upstream.phase]]\nfrom = \n", "f.toml");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("f.toml:2:"), std::string::npos) << s.error().message;
}

// ---- the engine ----

TEST(FaultEngineTest, StartupFaultAppliesOutsidePhases) {
  FaultEngine engine(MustParse(R"({"mode":"garbage"})"), {}, 1);
  EXPECT_EQ(engine.Admit(0, 1).action, Action::kGarbage);
}

TEST(FaultEngineTest, SchedulePhasesFollowTime) {
  FaultEngine engine({}, MustSchedule("[[upstream.phase]]\nfrom = 10\nto = 20\nmode = \"error\"\n"),
                     1);
  EXPECT_EQ(engine.Admit(9'999'999, 1).action, Action::kAnswer);
  EXPECT_EQ(engine.Admit(10'000'000, 1).action, Action::kError);
  EXPECT_EQ(engine.Admit(20'000'000, 1).action, Action::kAnswer);
}

TEST(FaultEngineTest, OverrideWinsOverTheScheduleUntilReset) {
  FaultEngine engine({}, MustSchedule("[[upstream.phase]]\nfrom = 0\nto = 20\nmode = \"error\"\n"),
                     1);
  engine.SetOverride(MustParse(R"({"mode":"hang"})"));
  std::string source;
  EXPECT_EQ(engine.Effective(0, &source).mode, FaultMode::kHang);
  EXPECT_EQ(source, "control");
  engine.Reset(0);
  EXPECT_EQ(engine.Effective(0, &source).mode, FaultMode::kError);
  EXPECT_EQ(source, "schedule phase 1");
}

TEST(FaultEngineTest, ResetRestartsTheSchedule) {
  FaultEngine engine({}, MustSchedule("[[upstream.phase]]\nfrom = 0\nto = 10\nmode = \"error\"\n"),
                     1);
  EXPECT_EQ(engine.Admit(15'000'000, 1).action, Action::kAnswer);
  engine.Reset(15'000'000);
  EXPECT_EQ(engine.Admit(15'000'000, 1).action, Action::kError);
  EXPECT_EQ(engine.Admit(25'000'000, 1).action, Action::kAnswer);
}

TEST(FaultEngineTest, FlapAlternatesEveryNRequests) {
  FaultEngine engine(MustParse(R"({"mode":"flap","every":2,"status":502})"), {}, 1);
  std::vector<int> statuses;
  for (int i = 0; i < 8; ++i) {
    const Decision d = engine.Admit(0, 1);
    statuses.push_back(d.action == Action::kAnswer ? 200 : d.status);
  }
  EXPECT_EQ(statuses, (std::vector<int>{200, 200, 502, 502, 200, 200, 502, 502}));
}

TEST(FaultEngineTest, InterimPrecedesOneAnswerInEvery) {
  FaultEngine engine(MustParse(R"({"mode":"interim","every":3,"latency_ms":300})"), {}, 1);
  std::vector<int> interim;
  for (int i = 0; i < 7; ++i) {
    const Decision d = engine.Admit(0, 1);
    EXPECT_EQ(d.action, Action::kAnswer);
    EXPECT_EQ(d.delay, 300'000);
    interim.push_back(d.interim_status);
  }
  EXPECT_EQ(interim, (std::vector<int>{103, 0, 0, 103, 0, 0, 103}));
}

TEST(FaultJsonTest, InterimDefaultsToEarlyHintsOnEveryAnswer) {
  const FaultSpec s = MustParse(R"({"mode":"interim"})");
  EXPECT_EQ(s.mode, FaultMode::kInterim);
  EXPECT_EQ(s.interim_status, 103);
  EXPECT_EQ(s.every, 1);
  EXPECT_EQ(MustParse(R"({"mode":"interim","interim_status":100})").interim_status, 100);
}

TEST(FaultJsonTest, InterimStatusOutsideOneHundredsOrSwitchingProtocolsIsRefused) {
  EXPECT_EQ(ErrorField(R"({"mode":"interim","interim_status":101})"), "interim_status");
  EXPECT_EQ(ErrorField(R"({"mode":"interim","interim_status":200})"), "interim_status");
  EXPECT_EQ(ErrorField(R"({"mode":"interim","interim_status":99})"), "interim_status");
}

TEST(FaultEngineTest, CapacityRejectsOnlyBeyondCapacity) {
  FaultEngine engine(MustParse(R"({"mode":"capacity","capacity":2})"), {}, 1);
  EXPECT_EQ(engine.Admit(0, 2).action, Action::kAnswer);
  const Decision over = engine.Admit(0, 3);
  EXPECT_EQ(over.action, Action::kReject);
  EXPECT_EQ(over.status, 503);
  EXPECT_EQ(over.label, "capacity_rejected");
  EXPECT_EQ(engine.Admit(0, 1).action, Action::kAnswer);
}

TEST(FaultEngineTest, CapacityRelapseFailsEverythingForTheRelapse) {
  FaultEngine engine(MustParse(R"({"mode":"capacity","capacity":1,"relapse_ms":5000})"), {}, 1);
  EXPECT_EQ(engine.Admit(0, 2).action, Action::kError);
  EXPECT_EQ(engine.Admit(4'999'999, 1).action, Action::kError);
  EXPECT_EQ(engine.Admit(5'000'000, 1).action, Action::kAnswer);
}

// ---- the queue fault ----

TEST(FaultEngineTest, QueueServesCapacityAtOnceAndLinesUpTheRest) {
  FaultEngine engine(MustParse(R"({"mode":"queue","capacity":2,"latency_ms":50})"), {}, 1);
  std::vector<Decision> d;
  for (int i = 0; i < 4; ++i) {
    d.push_back(engine.Admit(0, i + 1));
    EXPECT_EQ(d.back().action, Action::kAnswer);
    EXPECT_EQ(d.back().delay, 50'000);
    EXPECT_NE(d.back().ticket, 0U);
  }
  EXPECT_FALSE(d[0].wait_for_server);
  EXPECT_FALSE(d[1].wait_for_server);
  EXPECT_TRUE(d[2].wait_for_server);
  EXPECT_TRUE(d[3].wait_for_server);
  EXPECT_EQ(engine.queue_waiting(), 2);
  // Each server that frees up goes to the oldest waiting request.
  EXPECT_EQ(engine.Leave(d[1].ticket), std::vector<std::uint64_t>{d[2].ticket});
  EXPECT_EQ(engine.Leave(d[0].ticket), std::vector<std::uint64_t>{d[3].ticket});
  EXPECT_EQ(engine.queue_waiting(), 0);
  EXPECT_TRUE(engine.Leave(d[2].ticket).empty());
  EXPECT_TRUE(engine.Leave(d[2].ticket).empty());  // given back twice: nothing more
}

// In virtual time: requests that all arrive at once under a queue of `capacity` servers, each
// served for `latency`, answered when their service ends. Returns each one's answer time.
std::vector<Micros> AnswerTimes(FaultEngine& engine, int requests) {
  struct Served {
    std::uint64_t ticket;
    Micros start;
    Micros delay;
  };
  std::vector<Served> serving;
  std::vector<Decision> waiting;
  std::vector<Micros> answered;
  for (int i = 0; i < requests; ++i) {
    const Decision d = engine.Admit(0, i + 1);
    if (d.wait_for_server) {
      waiting.push_back(d);
    } else {
      serving.push_back({d.ticket, 0, d.delay});
    }
  }
  while (!serving.empty()) {
    // The service that ends first (the oldest on a tie) answers and leaves.
    auto next = std::min_element(
        serving.begin(), serving.end(),
        [](const Served& a, const Served& b) { return a.start + a.delay < b.start + b.delay; });
    const Micros now = next->start + next->delay;
    const std::uint64_t ticket = next->ticket;
    serving.erase(next);
    answered.push_back(now);
    for (const std::uint64_t started : engine.Leave(ticket)) {
      auto it = std::find_if(waiting.begin(), waiting.end(),
                             [started](const Decision& w) { return w.ticket == started; });
      EXPECT_NE(it, waiting.end());
      if (it != waiting.end()) {
        serving.push_back({started, now, it->delay});
        waiting.erase(it);
      }
    }
  }
  EXPECT_TRUE(waiting.empty());
  return answered;
}

TEST(FaultEngineTest, QueueLatencyGrowsWithLoad) {
  FaultEngine engine(MustParse(R"({"mode":"queue","capacity":2,"latency_ms":100})"), {}, 1);
  EXPECT_EQ(AnswerTimes(engine, 7),
            (std::vector<Micros>{100'000, 100'000, 200'000, 200'000, 300'000, 300'000, 400'000}));
  // Under capacity, nobody waits.
  EXPECT_EQ(AnswerTimes(engine, 2), (std::vector<Micros>{100'000, 100'000}));
}

TEST(FaultEngineTest, QueueRequestThatLeavesWhileWaitingGetsNoServer) {
  FaultEngine engine(MustParse(R"({"mode":"queue","capacity":1})"), {}, 1);
  const Decision served = engine.Admit(0, 1);
  const Decision gone = engine.Admit(0, 2);
  const Decision next = engine.Admit(0, 3);
  ASSERT_TRUE(gone.wait_for_server);
  EXPECT_TRUE(engine.Leave(gone.ticket).empty());  // its client left: the line moves up
  EXPECT_EQ(engine.queue_waiting(), 1);
  EXPECT_EQ(engine.Leave(served.ticket), std::vector<std::uint64_t>{next.ticket});
}

TEST(FaultEngineTest, QueueLimitRefusesBeyondTheBound) {
  FaultEngine engine(MustParse(R"({"mode":"queue","capacity":1,"queue_limit":2})"), {}, 1);
  const Decision served = engine.Admit(0, 1);
  const Decision first = engine.Admit(0, 2);
  EXPECT_TRUE(engine.Admit(0, 3).wait_for_server);
  const Decision full = engine.Admit(0, 4);
  EXPECT_EQ(full.action, Action::kReject);
  EXPECT_EQ(full.status, 503);
  EXPECT_EQ(full.label, "capacity_rejected");
  EXPECT_EQ(full.ticket, 0U);
  // A place in the line frees up: the next one waits again.
  EXPECT_EQ(engine.Leave(served.ticket), std::vector<std::uint64_t>{first.ticket});
  EXPECT_TRUE(engine.Admit(0, 4).wait_for_server);
  EXPECT_EQ(engine.Admit(0, 5).action, Action::kReject);
}

TEST(FaultEngineTest, QueueLimitZeroRefusesWhenEveryServerIsBusy) {
  FaultEngine engine(MustParse(R"({"mode":"queue","capacity":1,"queue_limit":0})"), {}, 1);
  const Decision served = engine.Admit(0, 1);
  EXPECT_EQ(engine.Admit(0, 2).action, Action::kReject);
  EXPECT_TRUE(engine.Leave(served.ticket).empty());
  EXPECT_EQ(engine.Admit(0, 1).action, Action::kAnswer);
}

TEST(FaultEngineTest, QueueLineIsServedAfterTheFaultChanges) {
  FaultEngine engine(MustParse(R"({"mode":"queue","capacity":1})"), {}, 1);
  const Decision served = engine.Admit(0, 1);
  const Decision waiting = engine.Admit(0, 2);
  engine.SetOverride(MustParse(R"({"mode":"ok"})"));
  EXPECT_EQ(engine.Admit(0, 3).ticket, 0U);  // the new fault has no line
  engine.Reset(0);
  EXPECT_EQ(engine.Leave(served.ticket), std::vector<std::uint64_t>{waiting.ticket});
}

TEST(FaultEngineTest, QueueThatGrewTakesItsLineAsServersFree) {
  FaultEngine engine(MustParse(R"({"mode":"queue","capacity":1})"), {}, 1);
  const Decision served = engine.Admit(0, 1);
  const Decision a = engine.Admit(0, 2);
  const Decision b = engine.Admit(0, 3);
  engine.SetOverride(MustParse(R"({"mode":"queue","capacity":3})"));
  const Decision c = engine.Admit(0, 4);
  EXPECT_TRUE(c.wait_for_server);  // behind the line, not ahead of it
  EXPECT_EQ(engine.Leave(served.ticket),
            (std::vector<std::uint64_t>{a.ticket, b.ticket, c.ticket}));
}

TEST(FaultEngineTest, TooManyRequestsCarriesRetryAfter) {
  FaultEngine engine(MustParse(R"({"mode":"error","status":429,"retry_after_s":12})"), {}, 1);
  const Decision d = engine.Admit(0, 1);
  EXPECT_EQ(d.status, 429);
  EXPECT_EQ(d.retry_after_s, 12);
}

std::vector<Micros> Draws(const FaultSpec& spec, std::uint64_t seed, int n) {
  FaultEngine engine(spec, {}, seed);
  std::vector<Micros> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(engine.Admit(0, 1).delay);
  }
  return out;
}

TEST(FaultEngineTest, LatencyDrawsAreSeeded) {
  const FaultSpec spec =
      MustParse(R"({"mode":"slow","latency_dist":"lognormal","latency_ms":100})");
  EXPECT_EQ(Draws(spec, 7, 50), Draws(spec, 7, 50));
  EXPECT_NE(Draws(spec, 7, 50), Draws(spec, 8, 50));
}

TEST(FaultEngineTest, UniformLatencyStaysInRange) {
  const std::vector<Micros> draws =
      Draws(MustParse(R"({"mode":"slow","latency_min_ms":10,"latency_max_ms":20})"), 3, 2000);
  EXPECT_GE(*std::min_element(draws.begin(), draws.end()), 10'000);
  EXPECT_LE(*std::max_element(draws.begin(), draws.end()), 20'000);
  EXPECT_LT(*std::min_element(draws.begin(), draws.end()), 11'000);
  EXPECT_GT(*std::max_element(draws.begin(), draws.end()), 19'000);
}

TEST(FaultEngineTest, LognormalLatencyHasTheGivenMedianAndCap) {
  std::vector<Micros> draws =
      Draws(MustParse(R"({"mode":"slow","latency_dist":"lognormal","latency_ms":100,)"
                      R"("latency_sigma":0.5,"latency_max_ms":300})"),
            11, 4001);
  std::nth_element(draws.begin(), draws.begin() + 2000, draws.end());
  EXPECT_NEAR(static_cast<double>(draws[2000]), 100'000.0, 8'000.0);
  EXPECT_LE(*std::max_element(draws.begin(), draws.end()), 300'000);
}

TEST(FaultEngineTest, FixedLatencyIsExact) {
  EXPECT_EQ(Draws(MustParse(R"({"mode":"slow","latency_ms":8000})"), 1, 3),
            (std::vector<Micros>{8'000'000, 8'000'000, 8'000'000}));
}

}  // namespace
}  // namespace fusebox::vpic_sim
