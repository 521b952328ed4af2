// Reading vpic-sim's copies of the recorded vPIC responses (VPIC_SIM_DATA_DIR, a compile
// definition of the test target) from the tests that check answers against them.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace fusebox::vpic_sim {

// The bytes of a fixture, by its path under the data directory ("" when it cannot be read).
inline std::string ReadFixture(const std::string& fixture) {
  std::ifstream in(std::filesystem::path(VPIC_SIM_DATA_DIR) / fixture, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The vPIC body of a fixture: the `content` of a capture wrapper, else the whole file.
inline boost::json::object FixtureBody(const std::string& fixture) {
  boost::json::value v = boost::json::parse(ReadFixture(fixture));
  if (const boost::json::value* content = v.as_object().if_contains("content")) {
    return content->as_object();
  }
  return v.as_object();
}

}  // namespace fusebox::vpic_sim
