// The VIN test vectors of tests/data/vin-vectors.tsv (origin: tests/data/README.md), read the
// same way by every test that checks VIN rules against them (vin-gateway's validator, vpic-sim's
// decoder).
//
// The file is tab-separated with a header line: vin, valid_check_digit (yes / no / na),
// expected_model_year, expected_make_or_wmi, source. The vin column escapes control characters
// (\n, \t, \r) and backslashes with a backslash; LoadVinVectors undoes that, so `vin` is the
// exact input to test. Missing trailing cells are empty.
//
// Example:
//   for (const VinVector& row : LoadVinVectors(FUSEBOX_SOURCE_DIR "/tests/data/vin-vectors.tsv"))
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fusebox::testing {

struct VinVector {
  int line = 0;             // 1-based line in the file, for failure messages
  std::string vin;          // unescaped, not normalized
  std::string check_digit;  // yes, no, na
  std::string model_year;
  std::string make;  // expected_make_or_wmi
  std::string source;
};

inline std::string UnescapeVinCell(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      const char next = text[++i];
      out += next == 'n' ? '\n' : next == 't' ? '\t' : next == 'r' ? '\r' : next;
    } else {
      out += text[i];
    }
  }
  return out;
}

// Every data row of the file; empty when it cannot be read (tests assert the count).
inline std::vector<VinVector> LoadVinVectors(const std::string& path) {
  std::ifstream in(path);
  std::vector<VinVector> rows;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1) {
      continue;  // header
    }
    std::vector<std::string> cells;
    std::stringstream split(line);
    std::string cell;
    while (std::getline(split, cell, '\t')) {
      cells.push_back(cell);
    }
    cells.resize(5);
    rows.push_back({number, UnescapeVinCell(cells[0]), cells[1], cells[2], cells[3], cells[4]});
  }
  return rows;
}

}  // namespace fusebox::testing
