// VpicSimFaultJson: a control API body through vpic-sim's fault JSON reader, and back.
#include <cstddef>
#include <cstdint>
#include <string>

#include <boost/json/serialize.hpp>

#include "fault_json.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/fuzz_targets.h"

namespace fusebox::fuzz {

int VpicSimFaultJson(const std::uint8_t* data, std::size_t size) {
  auto spec = vpic_sim::ParseFaultJson(AsText(data, size));
  if (!spec) {
    // The field is the key as the body spells it, so it may be empty (`{"mode":"ok","":1}`).
    Check(!spec.error().message.empty());
    return 0;
  }
  Check(!spec->Validate().has_value());
  const std::string again_text = boost::json::serialize(vpic_sim::FaultSpecToJson(*spec));
  auto again = vpic_sim::ParseFaultJson(again_text);
  Check(again.has_value());
  Check(again && *again == *spec);
  return 0;
}

}  // namespace fusebox::fuzz
