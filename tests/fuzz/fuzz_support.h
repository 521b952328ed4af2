// What the fuzz targets and their smoke tests share: the trap that reports a broken invariant to
// libFuzzer (and fails a smoke test loudly), a target's committed seeds, and the deterministic
// mutations the smoke tests add to them.
//
// Seeds live in <target>/ directories (tests/fuzz/seeds/, tests/vin_gateway/fuzz/seeds/), one input
// per file. An input that crashed a target is kept, minimized, in <target>/crashes/ until the
// defect is fixed: SeedInputs() does not read subdirectories, so the smoke tests stay green, and
// scripts/fuzz.sh copies only the top-level files into the corpus it runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace fusebox::fuzz {

// A broken invariant: libFuzzer records the input as a crash.
inline void Check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

inline std::string_view AsText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The regular files directly in `dir` (not in its subdirectories), in name order.
inline std::vector<std::string> SeedInputs(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> out;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    out.push_back(s.str());
  }
  return out;
}

// One to four byte flips, insertions, deletions or truncations, drawn from `rng`.
inline std::string Mutate(std::string s, std::mt19937_64& rng) {
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

// Runs `target` on every seed and on `mutations` mutations of each; returns the runs made.
template <typename Target>
int RunSeedsAndMutations(Target target, const std::vector<std::string>& seeds, int mutations,
                         std::uint64_t rng_seed) {
  std::mt19937_64 rng(rng_seed);
  int runs = 0;
  const auto feed = [&](const std::string& s) {
    (void)target(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
    ++runs;
  };
  for (const std::string& seed : seeds) {
    feed(seed);
    for (int i = 0; i < mutations; ++i) {
      feed(Mutate(seed, rng));
    }
  }
  return runs;
}

}  // namespace fusebox::fuzz
