#include "fusebox/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"

namespace fusebox {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, PrometheusTextHasEverySeriesLabelledByBreaker) {
  fusebox::testing::ManualClock clock;
  auto b = CircuitBreaker::Create("vpic", {.failure_threshold = 1}, {.clock = &clock}).value();
  auto p = b->TryAcquire();
  ASSERT_TRUE(p.has_value());
  p->Record(Outcome::kFailure);
  (void)b->TryAcquire();
  std::string text;
  AppendPrometheus(text, b->Snapshot());
  EXPECT_THAT(text, HasSubstr("# TYPE fusebox_calls_total counter\n"));
  EXPECT_THAT(text, HasSubstr("fusebox_state{breaker=\"vpic\",state=\"OPEN\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fusebox_state{breaker=\"vpic\",state=\"CLOSED\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("fusebox_calls_total{breaker=\"vpic\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("fusebox_rejections_total{breaker=\"vpic\",reason=\"CIRCUIT_OPEN\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fusebox_outcomes_total{breaker=\"vpic\",outcome=\"failure\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fusebox_retry_after_seconds{breaker=\"vpic\"} 10\n"));
}

TEST(MetricsTest, HelpLinesCanBeLeftOutForTheSecondBreaker) {
  MetricsSnapshot m;
  m.name = "x";
  std::string text;
  AppendPrometheus(text, m, /*with_help=*/false);
  EXPECT_THAT(text, ::testing::Not(HasSubstr("# HELP")));
  EXPECT_THAT(text, HasSubstr("fusebox_calls_total{breaker=\"x\"} 0\n"));
}

TEST(MetricsTest, NumbersAreTheShortestThatReadBack) {
  MetricsSnapshot m;
  m.name = "x";
  m.failure_rate = 0.2;
  m.slow_call_rate = 1.0 / 3.0;
  std::string text;
  AppendPrometheus(text, m, false);
  EXPECT_THAT(text, HasSubstr("fusebox_failure_rate{breaker=\"x\"} 0.2\n"));
  EXPECT_THAT(text, HasSubstr("fusebox_slow_call_rate{breaker=\"x\"} 0.3333333333333333\n"));
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  MetricsSnapshot m;
  m.name = "a\"b\\c\nd";
  std::string text;
  AppendPrometheus(text, m, false);
  EXPECT_THAT(text, HasSubstr("breaker=\"a\\\"b\\\\c\\nd\""));
}

}  // namespace
}  // namespace fusebox
