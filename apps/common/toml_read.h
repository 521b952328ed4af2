// apps/common/toml_read.h
//
// Typed reads of TOML values, with the apps' one wording for a value of the wrong type or out of
// range. Each returns the value or a ReadError whose message follows a key in a LocatedError
// ("expected an integer, got a string"); the caller knows the key and the file.
//
//   ReadInteger   a TOML integer
//   ReadNumber    an integer or a finite float
//   ReadBool      true or false
//   ReadString    a string
//   ReadChoice    a string among `names`: its index ("must be "a", "b" or "c", got "x"")
//   ReadDuration  a string holding a decimal number and a unit ("250ms", duration.h's grammar; a
//                 bare number in a string is refused), or a TOML number of seconds (`10`, `0.5`)
//   ReadTable     a table
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "common/duration.h"
#include "fusebox/status.h"

namespace fusebox::app {

struct ReadError {
  std::string message;
};

// "a string", "an integer", "a float", "a table", ...: what a node holds, for messages.
std::string_view TypeName(const toml::node& node);

Result<std::int64_t, ReadError> ReadInteger(const toml::node& node);
Result<double, ReadError> ReadNumber(const toml::node& node);
Result<bool, ReadError> ReadBool(const toml::node& node);
Result<std::string, ReadError> ReadString(const toml::node& node);
Result<std::size_t, ReadError> ReadChoice(const toml::node& node,
                                          std::span<const std::string_view> names);
Result<Micros, ReadError> ReadDuration(const toml::node& node);
Result<const toml::table*, ReadError> ReadTable(const toml::node& node);

// `"a", "b" or "c"`: a list of allowed names as the messages give it.
std::string QuotedChoices(std::span<const std::string_view> names);

}  // namespace fusebox::app
