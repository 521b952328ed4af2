// The scenario loader's public face: files, variants, builds. The reading itself is
// ScenarioReader's (scenario_reader.h) and the settings tables'.
#include "scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <toml++/toml.h>

#include "common/duration.h"
#include "common/toml_read.h"
#include "scenario_reader.h"

namespace fusebox::sim {

struct ScenarioFile::Parsed {
  toml::table root;
};

ScenarioFile::ScenarioFile() = default;
ScenarioFile::ScenarioFile(ScenarioFile&&) noexcept = default;
ScenarioFile& ScenarioFile::operator=(ScenarioFile&&) noexcept = default;
ScenarioFile::~ScenarioFile() = default;

namespace {

std::string DefaultName(std::string_view path) {
  std::string stem = std::filesystem::path(path).stem().string();
  return stem.empty() ? std::string("scenario") : stem;
}

struct VariantTable {
  std::string name;
  const toml::table* table;
  std::size_t index;
};

// The [[variant]] tables, checked for shape and unique names.
Result<std::vector<VariantTable>, LoadError> Variants(const toml::table& root,
                                                      const std::string& path) {
  std::vector<VariantTable> out;
  const toml::node* node = root.get("variant");
  if (node == nullptr) {
    return out;
  }
  auto error_at = [&](const toml::node& n, std::string key, std::string message) {
    return app::ErrorAt(path, n, std::move(key), std::move(message));
  };
  const toml::array* array = node->as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    return error_at(*node, "variant", "expected [[variant]] tables");
  }
  std::size_t index = 0;
  for (const toml::node& element : *array) {
    const toml::table& table = *element.as_table();
    const std::string key = fmt::format("variant[{}]", index);
    const toml::node* name = table.get("name");
    if (name == nullptr) {
      return error_at(element, key, "missing key: name");
    }
    if (!name->is_string()) {
      return error_at(*name, key + ".name", app::ReadString(*name).error().message);
    }
    const std::string text = name->as_string()->get();
    for (const VariantTable& other : out) {
      if (other.name == text) {
        return error_at(
            *name, key + ".name",
            fmt::format("duplicate variant name \"{}\" (also variant[{}])", text, other.index));
      }
    }
    out.push_back(VariantTable{text, &table, index});
    ++index;
  }
  return out;
}

}  // namespace

std::string_view ToString(Arrivals arrivals) noexcept {
  return arrivals == Arrivals::kUniform ? "uniform" : "poisson";
}

std::string_view ToString(Mode mode) noexcept {
  switch (mode) {
    case Mode::kOk:
      return "ok";
    case Mode::kError:
      return "error";
    case Mode::kHang:
      return "hang";
    case Mode::kSlow:
      return "slow";
    case Mode::kFragile:
      return "fragile";
    case Mode::kWarming:
      return "warming";
    case Mode::kQueue:
      return "queue";
    case Mode::kRefuse:
      return "refuse";
  }
  return "?";
}

std::optional<Micros> ParseDuration(std::string_view text, bool* too_large) {
  Result<Micros, app::DurationError> micros =
      app::ParseDuration(text, app::DurationGrammar{app::BareNumber::kRefused});
  if (micros) {
    return *micros;
  }
  if (too_large != nullptr && micros.error().problem == app::DurationProblem::kTooLarge) {
    *too_large = true;
  }
  return std::nullopt;
}

Result<ScenarioFile, LoadError> LoadScenarioFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return LoadError{path, 0, 0, "", "cannot open the file"};
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return LoadError{path, 0, 0, "", "cannot read the file"};
  }
  return LoadScenarioString(text.str(), path);
}

Result<ScenarioFile, LoadError> LoadScenarioString(std::string_view text, std::string_view path) {
  ScenarioFile file;
  file.path_ = std::string(path);
  file.parsed_ = std::make_unique<ScenarioFile::Parsed>();
  try {
    file.parsed_->root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return app::SyntaxError(file.path_, e);
  }
  Result<Scenario, LoadError> base = BuildScenario(file, BuildOptions{});
  if (!base) {
    return base.error();
  }
  file.base_ = std::move(*base);
  Result<std::vector<VariantTable>, LoadError> variants = Variants(file.parsed_->root, file.path_);
  if (!variants) {
    return variants.error();
  }
  for (const VariantTable& variant : *variants) {
    BuildOptions options;
    options.variant = variant.name;
    Result<Scenario, LoadError> built = BuildScenario(file, options);
    if (!built) {
      return built.error();
    }
    file.variants_.push_back(std::move(*built));
  }
  return file;
}

Result<Scenario, LoadError> BuildScenario(const ScenarioFile& file, const BuildOptions& options) {
  const toml::table& root = file.parsed_->root;
  ScenarioReader builder(file.path_, DefaultName(file.path_));
  builder.ApplyRoot(root, "", /*is_variant=*/false);
  if (options.variant) {
    Result<std::vector<VariantTable>, LoadError> variants = Variants(root, file.path_);
    if (!variants) {
      return variants.error();
    }
    const auto found = std::find_if(variants->begin(), variants->end(), [&](const VariantTable& v) {
      return v.name == *options.variant;
    });
    if (found == variants->end()) {
      std::string names;
      for (const VariantTable& v : *variants) {
        names += names.empty() ? "" : ", ";
        names += "\"" + v.name + "\"";
      }
      return LoadError{file.path_, 0, 0, "variant",
                       fmt::format("no variant named \"{}\" (the file has: {})", *options.variant,
                                   names.empty() ? std::string("none") : names)};
    }
    builder.ApplyRoot(*found->table, fmt::format("variant[{}].", found->index),
                      /*is_variant=*/true);
  }
  for (const Override& o : options.overrides) {
    builder.ApplyOverride(o);
  }
  if (options.seed) {
    builder.SetSeed(*options.seed);
  }
  return builder.Finish();
}

}  // namespace fusebox::sim
