// fusebox-sim replay and advise in process: the log reader (times, malformed lines), the reading
// of a gateway config file, the readings of vPIC's unobserved gaps, faithfulness on the logs the
// integration test recorded (tests/data/replay/), and the advisor's front on a synthetic log
// whose best settings are known.
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "advise.h"
#include "common/gateway_breaker.h"
#include "gateway_config.h"
#include "replay.h"
#include "replay_log.h"
#include "replay_report.h"

namespace {

using fusebox::Outcome;
using fusebox::State;
using fusebox::sim::Incident;
using fusebox::sim::Micros;

const std::string kData = FUSEBOX_SOURCE_DIR "/tests/data/replay/";

// 2026-01-01T00:00:00Z plus `ms`.
std::string Ts(Micros ms) {
  return fmt::format("2026-01-01T00:{:02}:{:02}.{:03}Z", ms / 60'000, (ms / 1000) % 60, ms % 1000);
}

// A request line that made its own call, answered at `ms` after `latency_ms`.
std::string CallLine(Micros ms, int n, Micros latency_ms, Outcome outcome) {
  const char* status = outcome == Outcome::kSuccess   ? "OK"
                       : outcome == Outcome::kTimeout ? "UPSTREAM_SLOW"
                                                      : "UPSTREAM_ERROR";
  return fmt::format(
      R"({{"ts":"{}","level":"info","event":"request","request_id":"r{}","method":"GET",)"
      R"("target":"/api/v1/vin/V{}","client":"127.0.0.1","http_status":200,"status":"{}",)"
      R"("vin":"V{:06}","source":"{}","upstream":"call","upstream_outcome":"{}",)"
      R"("upstream_ms":{},"elapsed_ms":{}}})",
      Ts(ms), n, n, status, n, outcome == Outcome::kSuccess ? "live" : "",
      fusebox::ToString(outcome), latency_ms, latency_ms + 1);
}

std::string RefusedLine(Micros ms, int n) {
  return fmt::format(
      R"({{"ts":"{}","level":"info","event":"request","request_id":"r{}","method":"GET",)"
      R"("target":"/api/v1/vin/V{}","client":"127.0.0.1","http_status":503,)"
      R"("status":"CIRCUIT_OPEN","vin":"V{:06}","source":"","upstream_ms":null,"elapsed_ms":0.2}})",
      Ts(ms), n, n, n);
}

std::string ProbeLine(Micros ms, Micros latency_ms, Outcome outcome) {
  return fmt::format(
      R"({{"ts":"{}","level":"info","event":"request","request_id":"probe","method":"PROBE",)"
      R"("target":"/api/v1/vin/P","client":"","http_status":0,"status":"OK","vin":"P",)"
      R"("source":"live","upstream":"probe","upstream_outcome":"{}","upstream_ms":{},)"
      R"("elapsed_ms":{}}})",
      Ts(ms + latency_ms), fusebox::ToString(outcome), latency_ms, latency_ms);
}

Incident Read(const std::string& text) {
  std::istringstream in(text);
  auto incident = fusebox::sim::ReadIncident(in, "test.log");
  EXPECT_TRUE(incident) << incident.error();
  return incident ? std::move(*incident) : Incident{};
}

fusebox::sim::GatewaySettings Config(const std::string& text) {
  auto settings = fusebox::sim::ReadGatewayConfig(text, "gateway.toml");
  EXPECT_TRUE(settings) << settings.error().ToString();
  return settings ? *settings : fusebox::sim::DefaultGatewaySettings();
}

// ---- the log ----

TEST(ReplayLogTest, ReadsRfc3339Times) {
  EXPECT_EQ(fusebox::sim::ParseTimestamp("1970-01-01T00:00:01.5Z"), 1'500'000);
  EXPECT_EQ(fusebox::sim::ParseTimestamp("2024-05-01T12:34:56.789Z"), 1714566896789000);
  EXPECT_EQ(fusebox::sim::ParseTimestamp("2024-05-01T12:34:56Z"), 1714566896000000);
  EXPECT_FALSE(fusebox::sim::ParseTimestamp("2024-05-01 12:34:56Z"));
  EXPECT_FALSE(fusebox::sim::ParseTimestamp("2024-13-01T12:34:56Z"));
  EXPECT_FALSE(fusebox::sim::ParseTimestamp("2024-05-01T12:34:56.Z"));
}

TEST(ReplayLogTest, MalformedLinesAreNamedAndTheRestIsRead) {
  const std::string log =
      CallLine(1000, 1, 20, Outcome::kSuccess) + "\n" +
      "2026-01-01T00:00:01.100Z info request id=x method=GET\n" +       // text format
      "{\"ts\":\"yesterday\",\"event\":\"request\"}\n" +                // bad time
      "{\"ts\":\"2026-01-01T00:00:01.200Z\",\"event\":\"request\"\n" +  // cut short
      "\n" +                                                            // blank: fine
      CallLine(1300, 2, 20, Outcome::kFailure) + "\n" + RefusedLine(1400, 3) + "\n";
  const Incident incident = Read(log);
  EXPECT_EQ(incident.lines, 7U);
  EXPECT_EQ(incident.errors, 3U);
  ASSERT_EQ(incident.first_errors.size(), 3U);
  EXPECT_EQ(incident.first_errors[0].line, 2U);
  EXPECT_NE(incident.first_errors[0].message.find("--log-format json"), std::string::npos);
  EXPECT_EQ(incident.first_errors[1].line, 3U);
  EXPECT_NE(incident.first_errors[1].message.find("\"ts\""), std::string::npos);
  EXPECT_EQ(incident.first_errors[2].line, 4U);
  EXPECT_EQ(incident.recorded.requests, 3U);
  EXPECT_EQ(incident.recorded.refused, 1U);
  EXPECT_EQ(incident.recorded.served, 1U);
  ASSERT_EQ(incident.arrivals.size(), 3U);
  ASSERT_EQ(incident.observations.size(), 2U);
  // A call's arrival is its start: its line's time less its latency.
  EXPECT_EQ(incident.arrivals[0].t, 0);
  EXPECT_EQ(incident.observations[1].outcome, Outcome::kFailure);
}

TEST(ReplayLogTest, TransitionLinesAndLateCallsAreRead) {
  const std::string log =
      R"x({"ts":"2026-01-01T00:00:01.000Z","level":"warn","event":"message","message":"breaker vpic: CLOSED -> OPEN (consecutive_failures); next probe in 2s (the gateway's own)"})x"
      "\n"
      R"x({"ts":"2026-01-01T00:00:01.500Z","level":"warn","event":"message","message":"breaker redis: CLOSED -> OPEN (consecutive_failures)"})x"
      "\n"
      // Answered by the answer deadline, its call still running; the call's end follows.
      R"x({"ts":"2026-01-01T00:00:03.000Z","level":"info","event":"request","method":"GET","target":"/api/v1/vin/L","status":"UPSTREAM_LATE","vin":"L","source":"cache-stale","upstream":"call","upstream_ms":null,"elapsed_ms":2000})x"
      "\n"
      R"x({"ts":"2026-01-01T00:00:05.000Z","level":"info","event":"upstream_call","vin":"L","upstream":"call","upstream_outcome":"success","upstream_ms":4000})x"
      "\n";
  const Incident incident = Read(log);
  EXPECT_EQ(incident.errors, 0U);
  ASSERT_EQ(incident.transitions.size(), 1U);  // the vpic breaker's only
  EXPECT_EQ(incident.transitions[0].to, State::kOpen);
  EXPECT_EQ(incident.transitions[0].cause, "consecutive_failures");
  ASSERT_EQ(incident.arrivals.size(), 1U);
  ASSERT_EQ(incident.observations.size(), 1U);
  EXPECT_EQ(incident.arrivals[0].observation, 0);
  EXPECT_EQ(incident.observations[0].latency, 4'000'000);
  EXPECT_EQ(incident.arrivals[0].t, 0);  // 5 s less 4 s: the first instant
  EXPECT_EQ(incident.first_line, 0);
  EXPECT_EQ(incident.unknown_fates, 0U);
  EXPECT_EQ(incident.recorded.stale_served, 1U);
}

// ---- the config ----

TEST(ReplayConfigTest, ReadsTheGatewaysFileWithItsDefaultsAndEarlierNames) {
  const auto settings = Config(
      "listen = \"0.0.0.0:8080\"\ncache = \"memory\"\npolicy = \"time_window\"\n"
      "window = \"20s\"\nfailure_rate = 0.4\ncooldown = \"5s\"\nmax_in_flight = \"auto\"\n"
      "trusted_proxy = [\"10.0.0.0/8\"]\n");
  EXPECT_EQ(settings.breaker.trip, fusebox::TripPolicy::kTimeWindow);
  EXPECT_EQ(settings.breaker.window_size, 20U);
  EXPECT_DOUBLE_EQ(settings.breaker.failure_rate_threshold, 0.4);
  EXPECT_EQ(settings.breaker.cooldown, std::chrono::seconds(5));
  EXPECT_EQ(settings.breaker.probe_mode, fusebox::ProbeMode::kActive);  // the gateway's default
  EXPECT_EQ(settings.breaker.failure_threshold, 3U);
  EXPECT_TRUE(settings.max_in_flight_auto);
  EXPECT_EQ(fusebox::sim::DefaultGatewaySettings().breaker, fusebox::app::GatewayBreakerDefaults());
}

TEST(ReplayConfigTest, ABadValueIsNamedWithItsLine) {
  auto bad = fusebox::sim::ReadGatewayConfig("cache = \"memory\"\ncooldown = \"soon\"\n", "g.toml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().line, 2);
  EXPECT_EQ(bad.error().key, "cooldown");
  auto range = fusebox::sim::ReadGatewayConfig("failure_rate_threshold = 2\n", "g.toml");
  ASSERT_FALSE(range);
  EXPECT_NE(range.error().ToString().find("failure_rate_threshold"), std::string::npos);
  auto count =
      fusebox::sim::ReadGatewayConfig("trip = \"count_window\"\nwindow_size = \"30s\"\n", "g.toml");
  ASSERT_FALSE(count);
  EXPECT_EQ(count.error().line, 2);
}

TEST(ReplayConfigTest, TheBreakerPartReadsBackToTheSameBreaker) {
  auto settings = Config(
      "failure_threshold = 5\nprobe_interval = \"750ms\"\ntrip = \"count_window\"\n"
      "window_size = 40\n");
  const std::string toml = fusebox::sim::GatewayBreakerToml(settings.breaker);
  EXPECT_NE(toml.find("failure_threshold = 5\n"), std::string::npos);
  EXPECT_NE(toml.find("probe_interval = \"750ms\"\n"), std::string::npos);
  EXPECT_EQ(Config(toml).breaker, settings.breaker);
  EXPECT_EQ(fusebox::sim::GatewayBreakerToml(fusebox::sim::DefaultGatewaySettings().breaker),
            "# (the gateway's defaults)\n");
}

// ---- the readings ----

// The gateway's breaker kept users away from 30 s to 40 s, with a failed probe at 32 s and a good
// one at 40 s: a candidate that never opens sends calls into that gap, which the pessimistic
// reading takes as failing (the probe at 32 s) and the optimistic one as healthy (the one at 40 s).
TEST(ReplayReadingTest, TheGapBetweenAFailedAndAGoodProbeIsReadBothWays) {
  std::string log;
  int n = 0;
  for (Micros ms = 0; ms < 50'000; ms += 100) {
    if (ms < 30'000 || ms >= 40'100) {
      log += CallLine(ms + 20, n++, 20, Outcome::kSuccess) + "\n";
    } else if (ms < 30'300) {
      log += CallLine(ms + 20, n++, 20, Outcome::kFailure) + "\n";
    } else {
      log += RefusedLine(ms, n++) + "\n";
    }
  }
  log += ProbeLine(32'300, 20, Outcome::kFailure) + "\n" +
         ProbeLine(40'000, 20, Outcome::kSuccess) + "\n";
  const Incident incident = Read(log);
  auto never_opens = Config("failure_threshold = 1000000\n");
  const auto revivals = fusebox::sim::FindRevivals(incident, std::chrono::seconds(3));
  ASSERT_EQ(revivals.size(), 1U);
  EXPECT_EQ(revivals[0].earliest, 32'300'001);
  EXPECT_EQ(revivals[0].latest, 40'000'000);
  fusebox::sim::ReplayOptions options;
  options.reading = fusebox::sim::Reading::kPessimistic;
  auto pessimistic = fusebox::sim::Replay(incident, never_opens, revivals, options);
  options.reading = fusebox::sim::Reading::kOptimistic;
  auto optimistic = fusebox::sim::Replay(incident, never_opens, revivals, options);
  ASSERT_TRUE(pessimistic && optimistic);
  EXPECT_TRUE(pessimistic->read_gaps);
  EXPECT_TRUE(pessimistic->transitions.empty());
  EXPECT_EQ(pessimistic->counts.refused, 0U);
  // 30.0-30.2 failed in the log; the 23 refused from 30.3 to 32.5 lie between failures or near
  // the failed probe (failing both ways); the 72 from 32.6 to 39.7 between the failed and the
  // good probe; the last 3 near the good probe (healthy both ways).
  EXPECT_EQ(optimistic->counts.calls_while_failing, 3U + 23U);
  EXPECT_EQ(pessimistic->counts.calls_while_failing, 3U + 23U + 72U);
  EXPECT_EQ(pessimistic->counts.upstream_calls, optimistic->counts.upstream_calls);
}

// ---- faithfulness on recorded logs ----

void ExpectFaithful(const std::string& name) {
  auto incident = fusebox::sim::ReadIncidentFile(kData + name + ".log");
  ASSERT_TRUE(incident) << incident.error();
  EXPECT_EQ(incident->errors, 0U);
  auto settings = fusebox::sim::LoadGatewayConfig(kData + name + ".toml");
  ASSERT_TRUE(settings) << settings.error().ToString();
  const auto revivals =
      fusebox::sim::FindRevivals(*incident, settings->breaker.effective_slow_call_duration());
  auto run = fusebox::sim::Replay(*incident, *settings, revivals, {});
  ASSERT_TRUE(run) << run.error();
  ASSERT_GT(incident->transitions.size(), 1U);
  ASSERT_EQ(run->transitions.size(), incident->transitions.size());
  for (std::size_t i = 0; i < run->transitions.size(); ++i) {
    EXPECT_EQ(run->transitions[i].from, incident->transitions[i].from) << i;
    EXPECT_EQ(run->transitions[i].to, incident->transitions[i].to) << i;
    EXPECT_LE(std::llabs(run->transitions[i].t - incident->transitions[i].t), 1'000'000) << i;
  }
  const double refused = static_cast<double>(incident->recorded.refused);
  EXPECT_GT(refused, 0);
  EXPECT_LE(std::fabs(static_cast<double>(run->counts.refused) - refused),
            std::max(1.0, 0.02 * refused));
  const double served = static_cast<double>(incident->recorded.served);
  EXPECT_LE(std::fabs(static_cast<double>(run->counts.served) - served),
            std::max(1.0, 0.02 * served));
}

TEST(ReplayFaithfulnessTest, ARecordedHang) { ExpectFaithful("hang"); }
TEST(ReplayFaithfulnessTest, ARecordedErrorPeriod) { ExpectFaithful("errors"); }
TEST(ReplayFaithfulnessTest, ARecordedFlappingUpstream) { ExpectFaithful("flapping"); }

// ---- the advisor ----

// Ten decodes a second for a minute, each its own call (the gateway that logged it never
// opened): two lone failures at 5 s and 15 s, and vPIC failing from 30 s to 40 s. A threshold
// of 1 sends the fewest calls into the outage but opens on each lone failure (users refused,
// recovery slower); 3 rides the lone failures out; 10 sends more calls into the outage than 3
// and refuses no fewer users: it is off the front.
TEST(AdviseTest, TheFrontOfASyntheticLogIsTheKnownOne) {
  std::string log;
  int n = 0;
  for (Micros ms = 0; ms < 60'000; ms += 100) {
    const bool failing = ms == 5'000 || ms == 15'000 || (ms >= 30'000 && ms < 40'000);
    log += CallLine(ms + 20, n++, 20, failing ? Outcome::kFailure : Outcome::kSuccess) + "\n";
  }
  const Incident incident = Read(log);
  auto base = Config("failure_threshold = 1000000\nprobe_interval = \"2s\"\n");
  fusebox::sim::AdviseOptions options;
  options.axes = {{"failure_threshold", {"1", "3", "10"}}};
  options.jobs = 2;
  auto advice = fusebox::sim::Advise(incident, base, options, {});
  ASSERT_TRUE(advice) << advice.error();
  ASSERT_EQ(advice->candidates.size(), 3U);
  const auto& one = advice->candidates[0];
  const auto& three = advice->candidates[1];
  const auto& ten = advice->candidates[2];
  EXPECT_TRUE(one.front);
  EXPECT_TRUE(three.front);
  EXPECT_FALSE(ten.front);
  EXPECT_LT(one.sick_calls, three.sick_calls);
  EXPECT_LT(three.sick_calls, ten.sick_calls);
  EXPECT_LT(three.hurt, one.hurt);
  EXPECT_LT(three.delay, one.delay);
  // The given config never opens: every failing call reaches vPIC.
  EXPECT_EQ(advice->base.sick_calls, 2U + 100U);
  ASSERT_FALSE(advice->picks.empty());
  bool least_load = false;
  for (const auto& [why, index] : advice->picks) {
    if (why.find("least load") != std::string::npos) {
      least_load = true;
      EXPECT_EQ(index, 0U);
    }
    if (why.find("fewest users hurt") != std::string::npos) {
      EXPECT_EQ(index, 1U);
    }
  }
  EXPECT_TRUE(least_load);
  const std::string text = fusebox::sim::AdviceText(*advice, incident);
  // Each pick as the breaker part of the gateway's config: 3 is the gateway's default.
  EXPECT_NE(text.find(" s)\nfailure_threshold = 1\n\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" s)\n# (the gateway's defaults)\n"), std::string::npos) << text;
}

}  // namespace
