#include "common/located_error.h"

#include <fmt/format.h>

#include <limits>
#include <utility>

namespace fusebox::app {

std::string LocatedError::ToString() const {
  std::string out = file;
  if (line > 0) {
    out += fmt::format(":{}", line);
    if (column > 0) {
      out += fmt::format(":{}", column);
    }
  }
  out += ": ";
  if (!key.empty()) {
    out += key;
    out += ": ";
  }
  out += message;
  return out;
}

LocatedError ErrorAt(std::string_view file, const toml::node& node, std::string key,
                     std::string message) {
  const toml::source_region& source = node.source();
  return LocatedError{std::string(file), static_cast<int>(source.begin.line),
                      static_cast<int>(source.begin.column), std::move(key), std::move(message)};
}

LocatedError SyntaxError(std::string_view file, const toml::parse_error& error) {
  return LocatedError{std::string(file), static_cast<int>(error.source().begin.line),
                      static_cast<int>(error.source().begin.column), "",
                      std::string(error.description())};
}

bool ComesFirst(const LocatedError& a, const LocatedError& b) {
  auto rank = [](const LocatedError& e) {
    return std::pair(e.line == 0 ? std::numeric_limits<int>::max() : e.line, e.column);
  };
  return rank(a) < rank(b);
}

}  // namespace fusebox::app
