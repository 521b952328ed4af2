#include "common/toml_read.h"

#include <fmt/format.h>

#include <cmath>

namespace fusebox::app {

std::string_view TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date/time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

Result<std::int64_t, ReadError> ReadInteger(const toml::node& node) {
  if (const auto* value = node.as_integer()) {
    return value->get();
  }
  return ReadError{fmt::format("expected an integer, got {}", TypeName(node))};
}

Result<double, ReadError> ReadNumber(const toml::node& node) {
  if (const auto* value = node.as_integer()) {
    return static_cast<double>(value->get());
  }
  if (const auto* value = node.as_floating_point()) {
    if (!std::isfinite(value->get())) {
      return ReadError{"must be a finite number"};
    }
    return value->get();
  }
  return ReadError{fmt::format("expected a number, got {}", TypeName(node))};
}

Result<bool, ReadError> ReadBool(const toml::node& node) {
  if (const auto* value = node.as_boolean()) {
    return value->get();
  }
  return ReadError{fmt::format("expected true or false, got {}", TypeName(node))};
}

Result<std::string, ReadError> ReadString(const toml::node& node) {
  if (const auto* value = node.as_string()) {
    return value->get();
  }
  return ReadError{fmt::format("expected a string, got {}", TypeName(node))};
}

std::string QuotedChoices(std::span<const std::string_view> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) {
      out += i + 1 == names.size() ? " or " : ", ";
    }
    out += fmt::format("\"{}\"", names[i]);
  }
  return out;
}

Result<std::size_t, ReadError> ReadChoice(const toml::node& node,
                                          std::span<const std::string_view> names) {
  Result<std::string, ReadError> text = ReadString(node);
  if (!text) {
    return text.error();
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == *text) {
      return i;
    }
  }
  return ReadError{fmt::format("must be {}, got \"{}\"", QuotedChoices(names), *text)};
}

Result<Micros, ReadError> ReadDuration(const toml::node& node) {
  if (const auto* text = node.as_string()) {
    Result<Micros, DurationError> micros =
        ParseDuration(text->get(), DurationGrammar{BareNumber::kRefused});
    if (!micros) {
      return ReadError{micros.error().message};
    }
    return *micros;
  }
  if (node.is_integer() || node.is_floating_point()) {
    // value<double>() converts integers too.
    Result<Micros, DurationError> micros = SecondsToDuration(node.value<double>().value_or(-1.0));
    if (!micros) {
      return ReadError{micros.error().message};
    }
    return *micros;
  }
  return ReadError{fmt::format(
      "expected a duration such as \"250ms\" or a number of seconds, got {}", TypeName(node))};
}

Result<const toml::table*, ReadError> ReadTable(const toml::node& node) {
  if (const toml::table* table = node.as_table()) {
    return table;
  }
  return ReadError{fmt::format("expected a table, got {}", TypeName(node))};
}

}  // namespace fusebox::app
