// Runs the gateway's fuzz targets' bodies over the real inputs (every VIN vector, every vPIC
// fixture, the committed seeds of fuzz/seeds/<target>/ but not their crashes/ folders) and over
// seeded mutations of them, so that every build exercises what the fuzzers check and an input a
// fuzzer once found can be pinned as a seed.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fuzz/fuzz_support.h"
#include "vin_gateway/fuzz/fuzz_targets.h"

namespace {

std::vector<std::string> Corpus(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream s;
      s << in.rdbuf();
      out.push_back(s.str());
    }
  }
  return out;
}

std::vector<std::string> VinCorpus() {
  std::ifstream in(FUSEBOX_SOURCE_DIR "/tests/data/vin-vectors.tsv");
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    out.push_back(line.substr(0, line.find('\t')));
  }
  return out;
}

using fusebox::fuzz::Mutate;

int Feed(int (*target)(const std::uint8_t*, std::size_t), const std::string& s) {
  return target(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

TEST(FuzzSmokeTest, VinNormalizerHoldsItsInvariantsOnVectorsAndMutations) {
  const std::vector<std::string> corpus = VinCorpus();
  ASSERT_GT(corpus.size(), 100U);
  std::mt19937_64 rng(5);
  int runs = 0;
  for (const std::string& s : corpus) {
    EXPECT_EQ(Feed(fusebox::gateway::fuzz::VinNormalizer, s), 0);
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(Feed(fusebox::gateway::fuzz::VinNormalizer, Mutate(s, rng)), 0);
      ++runs;
    }
  }
  EXPECT_GT(runs, 2000);
}

TEST(FuzzSmokeTest, VpicParserHoldsItsInvariantsOnFixturesAndMutations) {
  const std::vector<std::string> corpus = Corpus(FUSEBOX_SOURCE_DIR "/apps/vpic-sim/data");
  ASSERT_GE(corpus.size(), 20U);
  std::mt19937_64 rng(7);
  int parsed_runs = 0;
  for (const std::string& s : corpus) {
    EXPECT_EQ(Feed(fusebox::gateway::fuzz::VpicParser, s), 0);
    for (int i = 0; i < 30; ++i) {
      EXPECT_EQ(Feed(fusebox::gateway::fuzz::VpicParser, Mutate(s, rng)), 0);
      ++parsed_runs;
    }
  }
  EXPECT_GT(parsed_runs, 500);
}

std::vector<std::string> Seeds(const std::string& target) {
  return fusebox::fuzz::SeedInputs(FUSEBOX_SOURCE_DIR "/tests/vin_gateway/fuzz/seeds/" + target);
}

TEST(FuzzSmokeTest, HttpRequestPathHoldsItsInvariantsOnSeedsAndMutations) {
  const std::vector<std::string> seeds = Seeds("http_request");
  ASSERT_GE(seeds.size(), 10U);
  EXPECT_GT(
      fusebox::fuzz::RunSeedsAndMutations(fusebox::gateway::fuzz::HttpRequestPath, seeds, 40, 19),
      600);
}

TEST(FuzzSmokeTest, UpstreamAnswerReadHoldsItsInvariantsOnSeedsAndMutations) {
  const std::vector<std::string> seeds = Seeds("upstream_answer");
  ASSERT_GE(seeds.size(), 10U);
  EXPECT_GT(fusebox::fuzz::RunSeedsAndMutations(fusebox::gateway::fuzz::UpstreamAnswerRead, seeds,
                                                60, 29),
            600);
}

TEST(FuzzSmokeTest, GatewayConfigFileHoldsItsInvariantsOnSeedsAndMutations) {
  const std::vector<std::string> seeds = Seeds("gateway_config");
  ASSERT_GE(seeds.size(), 5U);
  EXPECT_GT(fusebox::fuzz::RunSeedsAndMutations(fusebox::gateway::fuzz::GatewayConfigFile, seeds,
                                                100, 23),
            500);
}

}  // namespace
