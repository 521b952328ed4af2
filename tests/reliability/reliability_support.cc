#include "reliability/reliability_support.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

#include <fmt/core.h>
#include <boost/json/parse.hpp>

namespace reliability {

namespace json = boost::json;

int OpenDescriptors(pid_t pid) {
  std::error_code ec;
  std::filesystem::directory_iterator it(fmt::format("/proc/{}/fd", pid), ec);
  if (ec) {
    return -1;
  }
  int n = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) {
      return -1;
    }
    ++n;
  }
  return n;
}

long ResidentKib(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::strtol(line.c_str() + 6, nullptr, 10);
    }
  }
  return -1;
}

json::value Json(const HttpResult& r) {
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  return ec ? json::value() : v;
}

std::string Field(const HttpResult& r, const char* name) {
  const json::value v = Json(r);
  if (!v.is_object() || !v.as_object().contains(name) || !v.at(name).is_string()) {
    return "";
  }
  return std::string(v.at(name).as_string());
}

std::string UniqueVin(char series, int n) {
  // 1FTMW1T88M + series + 6 digits: a Ford WMI, a valid model-year code; the check digit may
  // not compute, which the gateway decodes anyway ("check_digit": "mismatch").
  return fmt::format("1FTMW1T88M{}{:06d}", series, n % 1000000);
}

namespace {

std::mutex matrix_mu;
std::vector<MatrixRow>& MatrixRows() {
  static std::vector<MatrixRow> rows;
  return rows;
}

std::string Cell(std::string s) {
  std::string out;
  for (const char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// Writes the matrix when the run ends, if RELIABILITY_MATRIX_OUT is set.
class MatrixWriter : public ::testing::Environment {
 public:
  void TearDown() override {
    const char* out = std::getenv("RELIABILITY_MATRIX_OUT");
    if (out == nullptr || *out == '\0') {
      return;
    }
    const std::filesystem::path path(out);
    if (path.has_parent_path()) {
      std::filesystem::create_directories(path.parent_path());
    }
    std::ofstream file(path);
    file << "| area | fault | setting | expected | observed | result |\n"
         << "|---|---|---|---|---|---|\n";
    const std::lock_guard lock(matrix_mu);
    for (const MatrixRow& row : MatrixRows()) {
      file << "| " << Cell(row.area) << " | " << Cell(row.fault) << " | " << Cell(row.setting)
           << " | " << Cell(row.expected) << " | " << Cell(row.observed) << " | "
           << (row.passed ? "pass" : "**FAIL**") << " |\n";
    }
    std::cout << "reliability matrix: " << MatrixRows().size() << " rows written to " << out
              << "\n";
  }
};

[[maybe_unused]] const ::testing::Environment* const kMatrixWriter =
    ::testing::AddGlobalTestEnvironment(new MatrixWriter);

}  // namespace

void AddMatrixRow(MatrixRow row) {
  const std::lock_guard lock(matrix_mu);
  MatrixRows().push_back(std::move(row));
}

void GatewayProcessTest::SetUp() {
  dir_ = std::filesystem::temp_directory_path() /
         ("vin_gateway_reliability_" + std::to_string(::getpid()) + "_" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
}

void GatewayProcessTest::TearDown() {
  if (HasFailure()) {
    if (gateway_) {
      std::cerr << "---- gateway log ----\n" << gateway_->Log();
    }
    if (sim_) {
      std::cerr << "---- vpic-sim log ----\n" << sim_->Log();
    }
  }
  gateway_.reset();
  sim_.reset();
  std::error_code ec;
  std::filesystem::permissions(dir_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(dir_, ec);
}

void GatewayProcessTest::StartSim(std::vector<std::string> args) {
  std::vector<std::string> argv = {VPIC_SIM_BINARY, "--listen", "127.0.0.1:0"};
  argv.insert(argv.end(), args.begin(), args.end());
  sim_ = std::make_unique<ChildProcess>(argv, std::vector<std::string>{},
                                        (dir_ / "vpic-sim.log").string());
  ASSERT_TRUE(sim_->started()) << sim_->Log();
}

void GatewayProcessTest::StartGateway(std::vector<std::string> args, std::vector<std::string> env,
                                      std::string upstream, std::vector<std::string> wrapper) {
  std::vector<std::string> argv = std::move(wrapper);
  const std::vector<std::string> defaults = {VIN_GATEWAY_BINARY,
                                             "--listen",
                                             "127.0.0.1:0",
                                             "--upstream-url",
                                             upstream.empty() ? sim_->url() : upstream,
                                             "--cache",
                                             "memory",
                                             "--client-rate",
                                             "0",
                                             "--call-timeout",
                                             "500ms",
                                             "--cooldown",
                                             "500ms",
                                             "--offline-db",
                                             "none"};
  argv.insert(argv.end(), defaults.begin(), defaults.end());
  argv.insert(argv.end(), args.begin(), args.end());
  gateway_ = std::make_unique<ChildProcess>(argv, env, (dir_ / "gateway.log").string());
  ASSERT_TRUE(gateway_->started()) << gateway_->Log();
}

HttpResult GatewayProcessTest::Get(const std::string& target) const {
  return Http(gateway_->port(), "GET", target);
}

HttpResult GatewayProcessTest::Decode(const std::string& vin) const {
  return Get("/api/v1/vin/" + vin);
}

void GatewayProcessTest::Fault(const std::string& body) const {
  ASSERT_EQ(Http(sim_->port(), "POST", "/__control/faults", body).status, 200) << body;
}

json::value GatewayProcessTest::SimStats() const {
  return Json(Http(sim_->port(), "GET", "/__control/stats"));
}

long GatewayProcessTest::UpstreamCalls() const {
  const json::value stats = SimStats();
  return stats.is_object() ? static_cast<long>(stats.at("requests_total").to_number<std::int64_t>())
                           : -1;
}

json::value GatewayProcessTest::Status() const { return Json(Get("/status")); }

json::value GatewayProcessTest::Breaker() const {
  const json::value status = Status();
  return status.is_object() ? status.at("breakers").as_array().at(0) : json::value();
}

std::string GatewayProcessTest::BreakerState() const {
  const json::value breaker = Breaker();
  return breaker.is_object() ? std::string(breaker.at("state").as_string()) : "";
}

std::string GatewayProcessTest::TransitionPath() const {
  const json::value breaker = Breaker();
  if (!breaker.is_object()) {
    return "";
  }
  std::string path;
  for (const json::value& t : breaker.at("recent_transitions").as_array()) {
    if (path.empty()) {
      path = std::string(t.at("from").as_string());
    }
    path += '>';
    path += std::string_view(t.at("to").as_string());
  }
  return path.empty() ? std::string(breaker.at("state").as_string()) : path;
}

bool GatewayProcessTest::AwaitCooldown(double timeout_s) const {
  return WaitUntil(
      [&] {
        const json::value status = Status();
        if (!status.is_object()) {
          return false;
        }
        const json::value& breaker = status.at("breakers").as_array().at(0);
        const json::object& b = breaker.as_object();
        const bool cooled =
            !b.contains("retry_after_s") || b.at("retry_after_s").to_number<double>() == 0;
        const json::object& upstream = status.at("upstream").as_object();
        const bool unheld =
            !upstream.contains("hold_s") || upstream.at("hold_s").to_number<double>() == 0;
        return cooled && unheld;
      },
      timeout_s);
}

namespace {

// A factor >= 1 from the environment variable `name`; 1 when unset or not a number in [1, 100].
double EnvScale(const char* name) {
  if (const char* text = std::getenv(name); text != nullptr) {
    char* end = nullptr;
    const double parsed = std::strtod(text, &end);
    if (end != text && *end == '\0' && parsed >= 1.0 && parsed <= 100.0) {
      return parsed;
    }
  }
  return 1.0;
}

}  // namespace

double GatewayProcessTest::SlackS() { return 0.1 * TimeScale(); }

double GatewayProcessTest::TimeScale() { return EnvScale("FUSEBOX_TEST_TIME_SCALE"); }

double GatewayProcessTest::MemoryScale() { return EnvScale("FUSEBOX_TEST_MEMORY_SCALE"); }

}  // namespace reliability
