// Runs the fuzz targets' bodies over the real inputs (every vector and fixture) and over seeded
// mutations of them, so that every build exercises what the fuzzers check.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

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

// Byte flips, insertions, deletions and truncations with a fixed seed.
std::string Mutate(std::string s, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> op(0, 3);
  std::uniform_int_distribution<int> byte(0, 255);
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < edits; ++i) {
    const std::size_t at = s.empty() ? 0 : rng() % s.size();
    switch (op(rng)) {
      case 0:
        if (!s.empty()) {
          s[at] = static_cast<char>(byte(rng));
        }
        break;
      case 1:
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(byte(rng)));
        break;
      case 2:
        if (!s.empty()) {
          s.erase(at, 1);
        }
        break;
      default:
        s.resize(at);
        break;
    }
  }
  return s;
}

int Feed(int (*target)(const std::uint8_t*, std::size_t), const std::string& s) {
  return target(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

TEST(FuzzSmokeTest, VinNormalizerHoldsItsInvariantsOnVectorsAndMutations) {
  const std::vector<std::string> corpus = VinCorpus();
  ASSERT_GT(corpus.size(), 100U);
  std::mt19937_64 rng(5);
  int runs = 0;
  for (const std::string& s : corpus) {
    EXPECT_EQ(Feed(vin_gateway::fuzz::VinNormalizer, s), 0);
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(Feed(vin_gateway::fuzz::VinNormalizer, Mutate(s, rng)), 0);
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
    EXPECT_EQ(Feed(vin_gateway::fuzz::VpicParser, s), 0);
    for (int i = 0; i < 30; ++i) {
      EXPECT_EQ(Feed(vin_gateway::fuzz::VpicParser, Mutate(s, rng)), 0);
      ++parsed_runs;
    }
  }
  EXPECT_GT(parsed_runs, 500);
}

}  // namespace
