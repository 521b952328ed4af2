// GatewayConfigFile: a --config TOML file through the gateway's config loader.
//
// The loader reads a path (ReadConfigFile: a regular file, which a memfd is), so the input is
// written to a memory file (memfd_create) once per input and read back through /proc/self/fd/N:
// no disk, no leftovers. The steps are ParseCommandLine's for `--config FILE`: the defaults,
// ApplyConfigFile, Validate.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "config/config.h"
#include "fuzz/fuzz_support.h"
#include "vin_gateway/fuzz/fuzz_targets.h"

namespace fusebox::gateway::fuzz {
namespace {

using fusebox::fuzz::Check;

// A memory file holding the current input; its path reads it from the start.
class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("gateway-config-fuzz", MFD_CLOEXEC)) {
    Check(fd_ >= 0);
    path_ = fmt::format("/proc/self/fd/{}", fd_);
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  const std::string& Hold(const std::uint8_t* data, std::size_t size) {
    Check(ftruncate(fd_, 0) == 0);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      Check(n > 0);
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

void CheckDuration(Duration d) { Check(ParseDuration(FormatDuration(d)) == d); }

}  // namespace

int GatewayConfigFile(const std::uint8_t* data, std::size_t size) {
  static MemoryFile file;
  const std::string& path = file.Hold(data, size);
  GatewayConfig config;
  std::optional<ConfigError> error = ApplyConfigFile(config, path);
  if (!error) {
    error = config.Validate();
  }
  if (error) {
    // A typed error: the flag it is about, and a message that names it.
    Check(error->field.starts_with("--"));
    Check(!error->message.empty());
    Check(error->message.find(error->field) != std::string::npos);
    return 0;
  }
  // A config the gateway would start with.
  Check(!config.BreakerConfig().Validate().has_value());
  Check(config.effective_client_burst() >= 1);
  CheckDuration(config.cache_ttl);
  CheckDuration(config.breaker.call_timeout);
  CheckDuration(config.breaker.cooldown);
  CheckDuration(config.client_timeout);
  CheckDuration(config.shutdown_grace);
  // Applying its own settings again changes nothing.
  GatewayConfig again;
  Check(!ApplySetting(again, "--call-timeout", FormatDuration(config.breaker.call_timeout))
             .has_value());
  Check(again.breaker.call_timeout == config.breaker.call_timeout);
  return 0;
}

}  // namespace fusebox::gateway::fuzz
