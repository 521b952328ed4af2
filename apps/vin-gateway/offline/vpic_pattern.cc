#include "offline/vpic_pattern.h"

#include <cstddef>

namespace fusebox::gateway {

std::string PatternTarget(std::string_view vin) {
  std::string target = vin.size() > 3 ? std::string(vin.substr(3, 5)) : std::string();
  if (vin.size() > 9) {
    target += '|';
    target += vin.substr(9);
  }
  return target;
}

int Specificity(std::string_view key) {
  int n = 0;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '[') {
      const std::size_t close = key.find(']', i);
      i = close == std::string_view::npos ? key.size() : close;
      ++n;
    } else if (key[i] != '*' && key[i] != '|') {
      ++n;
    }
  }
  return n;
}

namespace {

// Whether `c` is in the set "[..]" whose characters lie between `open` and `close` of `key`.
bool InSet(std::string_view key, std::size_t open, std::size_t close, char c) {
  bool in = false;
  for (std::size_t m = open + 1; m < close; ++m) {
    if (m + 2 < close && key[m + 1] == '-') {
      in = in || (c >= key[m] && c <= key[m + 2]);
      m += 2;
    } else {
      in = in || key[m] == c;
    }
  }
  return in;
}

}  // namespace

bool KeyMatches(std::string_view key, std::string_view target) {
  std::size_t j = 0;
  for (std::size_t i = 0; i < key.size(); ++j) {
    if (j >= target.size()) {
      return false;
    }
    const char c = target[j];
    const char k = key[i];
    if (k == '*') {
      ++i;
      continue;
    }
    if (k == '[') {
      const std::size_t close = key.find(']', i + 1);
      if (close == std::string_view::npos || !InSet(key, i, close, c)) {
        return false;
      }
      i = close + 1;
      continue;
    }
    if (k != c) {
      return false;
    }
    ++i;
  }
  return true;
}

int YearCodeIndex(char c) {
  static constexpr std::string_view kCodes = "ABCDEFGHJKLMNPRSTVWXY123456789";
  const std::size_t i = kCodes.find(c);
  return i == std::string_view::npos ? -1 : static_cast<int>(i);
}

}  // namespace fusebox::gateway
