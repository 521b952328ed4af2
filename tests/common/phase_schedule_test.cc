// Tests of the shared [[upstream.phase]] reader (common/phase_schedule.h): the common keys, the
// tool's vocabulary, 0-based keys in errors, the first error in the file, span checks.
#include "common/phase_schedule.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace fusebox::app {
namespace {

constexpr std::array<std::string_view, 3> kModes = {"ok", "error", "hang"};
constexpr std::array<std::string_view, 1> kKeys = {"latency"};
const PhaseVocabulary kVocabulary{kModes, kKeys};

struct Loaded {
  toml::table root;
  Result<std::vector<PhaseTable>, LocatedError> phases = LocatedError{};
};

Loaded Read(std::string_view text, std::string_view prefix = "") {
  Loaded out;
  out.root = toml::parse(text, std::string_view("s.toml"));
  const toml::node* phases = out.root.at_path("upstream.phase").node();
  out.phases = ReadPhaseTables(*phases, "s.toml", prefix, kVocabulary);
  return out;
}

std::string ErrorOf(std::string_view text, std::string_view prefix = "") {
  Loaded loaded = Read(text, prefix);
  return loaded.phases ? std::string("<no error>") : loaded.phases.error().ToString();
}

TEST(PhaseTablesTest, ReadsTheCommonKeysInFileOrder) {
  Loaded loaded = Read(R"(
[[upstream.phase]]
from = "20s"
to = 30
mode = "hang"
latency = "1s"
[[upstream.phase]]
from = 0
to = "10s"
mode = "ok"
)");
  ASSERT_TRUE(loaded.phases) << loaded.phases.error().ToString();
  const std::vector<PhaseTable>& p = *loaded.phases;
  ASSERT_EQ(p.size(), 2U);
  EXPECT_EQ(p[0].index, 0U);
  EXPECT_EQ(p[0].from, 20'000'000);
  EXPECT_EQ(p[0].to, 30'000'000);
  EXPECT_EQ(p[0].mode, 2U);
  EXPECT_TRUE(p[0].table->contains("latency"));
  EXPECT_EQ(p[1].mode, 0U);
}

TEST(PhaseTablesTest, ErrorsNameTheKeyFromZeroAndPointAtTheValue) {
  struct Case {
    std::string_view text;
    std::string_view error;
  };
  constexpr Case kCases[] = {
      {"[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"bogus\"\n",
       R"(s.toml:4:8: upstream.phase[0].mode: must be "ok", "error" or "hang", got "bogus")"},
      {"[[upstream.phase]]\nfrom = \"10\"\nto = 20\nmode = \"ok\"\n",
       "s.toml:2:8: upstream.phase[0].from: bad duration \"10\": a string needs a unit"},
      {"[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"ok\"\nlatnecy = 3\n",
       "s.toml:5:11: upstream.phase[0].latnecy: unknown key"},
      {"seed = 1\n\n[[upstream.phase]]\nfrom = 1\nmode = \"hang\"\n",
       "s.toml:3:1: upstream.phase[0]: missing key: to"},
      {"[[upstream.phase]]\nfrom = 1\nto = 2\nmode = \"ok\"\n[[upstream.phase]]\nfrom = 3\n"
       "to = 4\nmode = 5\n",
       "s.toml:8:8: upstream.phase[1].mode: expected a string, got an integer"},
      {"[upstream]\nphase = 3\n", "s.toml:2:9: upstream.phase: expected [[upstream.phase]] tables"},
  };
  for (const Case& c : kCases) {
    EXPECT_TRUE(ErrorOf(c.text).starts_with(c.error)) << ErrorOf(c.text) << "\nwanted\n" << c.error;
  }
}

TEST(PhaseTablesTest, ReportsTheFirstErrorInTheFileWithThePrefix) {
  // toml++ iterates keys by name: `to` (line 2) would come after `mode` (line 3).
  EXPECT_EQ(ErrorOf("[[upstream.phase]]\nto = \"x\"\nmode = \"nope\"\nfrom = 0\n", "variant[1]."),
            "s.toml:2:6: variant[1].upstream.phase[0].to: bad duration \"x\": expected a "
            "non-negative decimal number and a unit (us, ms, s, m, h, d), e.g. \"250ms\" or "
            "\"2m30s\", or a number of seconds");
}

TEST(PhaseSpansTest, ToMustComeAfterFrom) {
  const std::array<PhaseSpan, 2> spans = {{{0, 10}, {5'000'000, 5'000'000}}};
  std::optional<PhaseProblem> problem = CheckPhaseSpans(spans);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->index, 1U);
  EXPECT_EQ(problem->field, "to");
  EXPECT_EQ(problem->message, "must be after from (5.0 s), got 5.0 s");
}

TEST(PhaseSpansTest, AnOverlapIsReportedAtTheLaterPhaseInTheFile) {
  // Written in time order, and reversed: the phase later in the file is the one named.
  const std::array<PhaseSpan, 2> in_order = {{{10'000'000, 30'000'000}, {20'000'000, 40'000'000}}};
  const std::array<PhaseSpan, 2> reversed = {{{20'000'000, 40'000'000}, {10'000'000, 30'000'000}}};
  std::optional<PhaseProblem> a = CheckPhaseSpans(in_order);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->index, 1U);
  EXPECT_EQ(a->field, "from");
  EXPECT_EQ(a->message, "phase [20.0 s, 40.0 s) overlaps upstream.phase[0] [10.0 s, 30.0 s)");
  std::optional<PhaseProblem> b = CheckPhaseSpans(reversed);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->index, 1U);
  EXPECT_EQ(b->message, "phase [10.0 s, 30.0 s) overlaps upstream.phase[0] [20.0 s, 40.0 s)");
}

TEST(PhaseSpansTest, TouchingPhasesDoNotOverlapAndSortByFrom) {
  const std::array<PhaseSpan, 3> spans = {{{20, 30}, {0, 10}, {10, 20}}};
  EXPECT_FALSE(CheckPhaseSpans(spans));
  EXPECT_EQ(TimeOrder(spans), (std::vector<std::size_t>{1, 2, 0}));
}

}  // namespace
}  // namespace fusebox::app
