// apps/common/located_error.h
//
// The one error format of the apps' TOML files (scenarios, schedules):
//
//   file:line:column: key: message
//
// `key` is dotted as the user would write it to override the value (`breaker.cooldown`,
// `upstream.phase[0].from`, `variant[1].traffic.rate`; array indexes are 0-based, in file
// order). The parts that are unknown are left out: a TOML syntax error has no key, a command-line
// override has no line (its key then reads "KEY (override)"), an unreadable file has neither.
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

namespace fusebox::app {

struct LocatedError {
  std::string file;
  int line = 0;     // 1-based; 0 when the value has no place in the file
  int column = 0;   // 1-based; 0 when unknown
  std::string key;  // dotted; empty for TOML syntax errors
  std::string message;

  // "file:line:column: key: message" (the parts that are known).
  std::string ToString() const;

  friend bool operator==(const LocatedError&, const LocatedError&) = default;
};

// An error about the value `node` of `file` (where the node starts).
LocatedError ErrorAt(std::string_view file, const toml::node& node, std::string key,
                     std::string message);

// A TOML syntax error, located where the parser stopped.
LocatedError SyntaxError(std::string_view file, const toml::parse_error& error);

// True when `a` comes before `b` in the file; errors without a line come last. Loaders that find
// several problems report the first one in the file.
bool ComesFirst(const LocatedError& a, const LocatedError& b);

}  // namespace fusebox::app
