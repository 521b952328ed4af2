// Every fault vpic-sim can inject (docs/vpic-sim.md), and answers it cannot make (giant, deeply
// nested, over the body cap) from a fake upstream in this process, each against a fresh gateway
// with the default consecutive-failure policy (three in a row open the breaker) and a 500 ms call
// budget; and the faults where the policy changes the story (errors, hangs, slow answers) again
// under a count window and under a time window with slow-call rate and in-flight slow calls. For
// each fault: the reason code of every answer, its latency (within the budget + 100 ms), the
// breaker's transitions through a whole cycle (open, a failed probe, recovery), no descriptor left
// behind and a bounded resident set.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "reliability/reliability_support.h"

namespace reliability {
namespace {

namespace json = boost::json;

// The breaker settings a fault runs under: the matrix's name for them and the gateway's flags.
struct Policy {
  std::string setting;
  std::vector<std::string> args;
};
const Policy kConsecutive{"consecutive 3, call timeout 500 ms, cooldown 500 ms", {}};
const Policy kCountWindow{
    "count window of 4, minimum 4 calls, failure rate 0.5, call timeout 500 ms",
    {"--trip", "count_window", "--window-size", "4", "--minimum-calls", "4",
     "--failure-rate-threshold", "0.5"}};
const Policy kTimeWindowSlow{
    "time window 10 s, minimum 3 calls, slow-call rate 0.5 at 200 ms, in-flight slow counted, "
    "call timeout 500 ms",
    {"--trip", "time_window", "--window-size", "10s", "--minimum-calls", "3",
     "--slow-call-duration", "200ms", "--slow-call-rate-threshold", "0.5",
     "--inflight-slow-accounting"}};

struct UpstreamFault {
  std::string name;                  // the matrix's name for it
  std::string control;               // vpic-sim's POST /__control/faults body
  std::vector<std::string> answers;  // the status of each decode in turn, until the breaker opens
  bool slow = false;                 // answers come at the budget, not at once
  bool probe_fails = true;           // a probe under the same fault fails (and reopens)
  int concurrent = 0;                // > 0: that many decodes at once instead of in turn
  long rss_bound_mib = 64;           // the resident set stays below this
  bool opens = true;                 // false: every answer above is served, the breaker stays
                                     // CLOSED
  // The gateway's --call-timeout for this case when it is CPU-bound work rather than waiting:
  // the suite's budget times FUSEBOX_TEST_TIME_SCALE (the sanitizer builds are slow to parse).
  bool budget_scaled = false;
};

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) {
    out += (out.empty() ? "" : separator) + p;
  }
  return out;
}

// An upstream in this process for the answers vpic-sim cannot make. Each connection gets one
// answer (Connection: close) chosen by the mode: "ok" (a small vPIC answer), "giant" (30,000
// fields, just under the 1 MiB body cap), "oversize" (a 1.5 MiB answer) or "deep" (a field nested
// 100,000 arrays deep).
class FakeUpstream {
 public:
  FakeUpstream() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listener_, 64);
    socklen_t len = sizeof(addr);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  FakeUpstream(const FakeUpstream&) = delete;
  FakeUpstream& operator=(const FakeUpstream&) = delete;
  ~FakeUpstream() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }

  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  void SetMode(const std::string& mode) {
    const std::lock_guard lock(mu_);
    mode_ = mode;
  }
  long requests() const { return requests_.load(); }

 private:
  static std::string Row(const std::string& vin, const std::string& extra) {
    return fmt::format(
        R"({{"Count":1,"Message":"Results returned successfully","SearchCriteria":)"
        R"("VIN(s): {0}","Results":[{{"VIN":"{0}","Make":"FORD","Model":"F-150",)"
        R"("ModelYear":"2021","ErrorCode":"0","ErrorText":"0 - VIN decoded clean"{1}}}]}})",
        vin, extra);
  }

  static std::string Body(const std::string& mode, const std::string& vin) {
    std::string extra;
    if (mode == "giant") {
      for (int i = 0; i < 30000; ++i) {
        extra += fmt::format(R"(,"Extra{:05d}":"{:0>17}")", i, i);
      }
    } else if (mode == "oversize") {
      for (int i = 0; i < 45000; ++i) {
        extra += fmt::format(R"(,"Extra{:05d}":"{:0>17}")", i, i);
      }
    } else if (mode == "deep") {
      constexpr int kDepth = 100000;
      extra = R"(,"Deep":)" + std::string(kDepth, '[') + std::string(kDepth, ']');
    }
    return Row(vin, extra);
  }

  void Serve() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) {
        continue;
      }
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) {
        continue;
      }
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        pollfd c{fd, POLLIN, 0};
        if (::poll(&c, 1, 2000) <= 0) {
          break;
        }
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) {
          break;
        }
        request.append(buffer, static_cast<std::size_t>(n));
      }
      ++requests_;
      // GET /api/vehicles/DecodeVinValues/VIN?format=json HTTP/1.1
      std::string vin;
      const std::size_t at = request.find("DecodeVinValues/");
      if (at != std::string::npos) {
        const std::size_t from = at + 16;
        vin = request.substr(from, request.find_first_of("?/ ", from) - from);
      }
      std::string mode;
      {
        const std::lock_guard lock(mu_);
        mode = mode_;
      }
      const std::string body = Body(mode, vin);
      const std::string answer = fmt::format(
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
          "Connection: close\r\n\r\n{}",
          body.size(), body);
      std::size_t sent = 0;
      while (sent < answer.size()) {
        const ssize_t n = ::send(fd, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
          break;
        }
        sent += static_cast<std::size_t>(n);
      }
      ::close(fd);
    }
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<long> requests_{0};
  std::mutex mu_;
  std::string mode_ = "ok";
  std::thread thread_;
};

class HostileUpstreamTest : public GatewayProcessTest {
 protected:
  void SetFault(const std::string& control) {
    if (fake_) {
      fake_->SetMode(control == R"({"mode":"ok"})" ? "ok" : control);
    } else {
      Fault(control);
    }
  }
  long Calls() const { return fake_ ? fake_->requests() : UpstreamCalls(); }
  int IdleUpstreamConnections() const {
    return Status().at("upstream").at("idle_connections").to_number<int>();
  }

  struct Observed {
    std::vector<std::string> answers;
    double worst_latency_s = 0;
    std::string path;
    // Descriptors other than the upstream pool's idle connections (the pool keeps up to
    // --max-in-flight of them, legitimately more after calls at once).
    int fds_before = 0;
    int fds_after = 0;
    int idle_before = 0;
    int idle_after = 0;
    long rss_before_kib = 0;
    long rss_kib = 0;
  };

  // One whole breaker cycle under `fault`, measured; the assertions are the caller's.
  Observed RunCycle(const UpstreamFault& fault) {
    Observed seen;
    int n = 0;
    // Warm up: one healthy decode, so the pooled upstream connection exists before counting.
    EXPECT_EQ(Decode(UniqueVin('W', n++)).status, 200);
    seen.idle_before = IdleUpstreamConnections();
    seen.fds_before = OpenDescriptors(gateway_->pid()) - seen.idle_before;
    seen.rss_before_kib = ResidentKib(gateway_->pid());
    SetFault(fault.control);
    auto record = [&](const HttpResult& r) {
      seen.answers.push_back(r.status == 0 ? "no answer" : Field(r, "status"));
      seen.worst_latency_s = std::max(seen.worst_latency_s, r.seconds);
    };
    if (fault.concurrent > 0) {
      std::vector<HttpResult> results(static_cast<std::size_t>(fault.concurrent));
      std::vector<std::thread> threads;
      for (int i = 0; i < fault.concurrent; ++i) {
        const std::string vin = UniqueVin('C', i);
        threads.emplace_back([&, i, vin] { results[static_cast<std::size_t>(i)] = Decode(vin); });
      }
      for (std::thread& t : threads) {
        t.join();
      }
      for (const HttpResult& r : results) {
        record(r);
      }
      std::sort(seen.answers.begin(), seen.answers.end());
    } else {
      for (std::size_t i = 0; i < fault.answers.size(); ++i) {
        record(Decode(UniqueVin('F', n++)));
      }
    }
    if (fault.opens) {
      // Open now: the next decode fails fast without an upstream call.
      const long calls = Calls();
      const HttpResult fast = Decode(UniqueVin('F', n++));
      seen.answers.push_back(Field(fast, "status"));
      seen.worst_latency_s = std::max(seen.worst_latency_s, fast.seconds);
      EXPECT_EQ(Calls(), calls) << fault.name << ": an open breaker called the upstream";
    }
    // A probe under the same fault (it reopens the breaker), then recovery.
    if (fault.opens && fault.probe_fails) {
      EXPECT_TRUE(AwaitCooldown());
      record(Decode(UniqueVin('P', n++)));
    }
    SetFault(R"({"mode":"ok"})");
    EXPECT_TRUE(AwaitCooldown());
    record(Decode(UniqueVin('R', n++)));
    seen.path = TransitionPath();
    // Descriptors: the failed calls' connections are closed; allow the gateway a moment to
    // finish closing them.
    WaitUntil(
        [&] {
          seen.idle_after = IdleUpstreamConnections();
          seen.fds_after = OpenDescriptors(gateway_->pid()) - seen.idle_after;
          return seen.fds_after <= seen.fds_before;
        },
        2);
    seen.rss_kib = ResidentKib(gateway_->pid());
    return seen;
  }

  std::unique_ptr<FakeUpstream> fake_;

  void Check(const UpstreamFault& fault, const std::string& expected_path,
             const Policy& policy = kConsecutive) {
    const double budget_s = fault.budget_scaled ? kBudgetS * TimeScale() : kBudgetS;
    // The traces below are passive probing's (a user's request probes after the cooldown);
    // active probing has its own tests (integration_test.cc). Only calls that reach the budget
    // are slow here, as the traces assume: a slow sanitizer build must not make a 1 MiB answer
    // a slow call.
    // (A policy's own --slow-call-duration comes later and wins.)
    std::vector<std::string> args = {"--probe-mode", "passive", "--slow-call-duration",
                                     fmt::format("{}ms", std::lround(budget_s * 1000))};
    args.insert(args.end(), policy.args.begin(), policy.args.end());
    if (fault.budget_scaled) {
      args.insert(args.end(),
                  {"--call-timeout", fmt::format("{}ms", std::lround(budget_s * 1000))});
    }
    if (fake_) {
      StartGateway(args, {}, fake_->url());
    } else {
      StartSim();
      StartGateway(args);
    }
    const Observed seen = RunCycle(fault);
    std::vector<std::string> expected = fault.answers;
    if (fault.opens) {
      expected.push_back("CIRCUIT_OPEN");
    }
    if (fault.opens && fault.probe_fails) {
      expected.push_back(fault.answers.back());
    }
    expected.push_back("OK");
    const double bound = budget_s + SlackS();
    const bool answers_ok = seen.answers == expected;
    const bool latency_ok = seen.worst_latency_s <= bound;
    const bool path_ok = seen.path == expected_path;
    const bool fds_ok = seen.fds_after <= seen.fds_before && seen.fds_before > 0;
    const long kRssBoundKib =
        static_cast<long>(static_cast<double>(fault.rss_bound_mib) * 1024 * MemoryScale());
    const bool rss_ok = seen.rss_kib > 0 && seen.rss_kib < kRssBoundKib;
    EXPECT_EQ(seen.answers, expected) << fault.name;
    EXPECT_LE(seen.worst_latency_s, bound) << fault.name;
    if (fault.slow) {
      EXPECT_GE(seen.worst_latency_s, budget_s - 0.05) << fault.name << ": not cut at the budget";
    }
    EXPECT_EQ(seen.path, expected_path) << fault.name;
    EXPECT_TRUE(fds_ok) << fault.name << ": descriptors " << seen.fds_before << " -> "
                        << seen.fds_after;
    EXPECT_TRUE(rss_ok) << fault.name << ": resident " << seen.rss_kib << " KiB";
    AddMatrixRow(
        {"hostile upstream", fault.name, policy.setting,
         fmt::format("{}; transitions {}; at most {:.0f} ms; no descriptor leak; RSS "
                     "< {} MiB",
                     Join(expected, ", "), expected_path, bound * 1000, kRssBoundKib / 1024),
         fmt::format("{}; transitions {}; worst {:.0f} ms; fds {} -> {}; RSS {} -> {} "
                     "MiB",
                     Join(seen.answers, ", "), seen.path, seen.worst_latency_s * 1000,
                     seen.fds_before, seen.fds_after, seen.rss_before_kib / 1024,
                     seen.rss_kib / 1024),
         answers_ok && latency_ok && path_ok && fds_ok && rss_ok});
  }
};

constexpr char kFullCycle[] = "CLOSED>OPEN>HALF_OPEN>OPEN>HALF_OPEN>CLOSED";
constexpr char kShortCycle[] = "CLOSED>OPEN>HALF_OPEN>CLOSED";
const std::vector<std::string> kThreeErrors = {"UPSTREAM_ERROR", "UPSTREAM_ERROR",
                                               "UPSTREAM_ERROR"};
const std::vector<std::string> kThreeSlow = {"UPSTREAM_SLOW", "UPSTREAM_SLOW", "UPSTREAM_SLOW"};
const std::vector<std::string> kTwoSlow = {"UPSTREAM_SLOW", "UPSTREAM_SLOW"};

TEST_F(HostileUpstreamTest, Error500) {
  Check({"error 500", R"({"mode":"error","status":500})", kThreeErrors}, kFullCycle);
}
TEST_F(HostileUpstreamTest, Error503) {
  Check({"error 503", R"({"mode":"error","status":503})", kThreeErrors}, kFullCycle);
}
TEST_F(HostileUpstreamTest, TooManyRequestsWithRetryAfter) {
  Check({"429, Retry-After 1", R"({"mode":"error","status":429,"retry_after_s":1})", kThreeErrors},
        kFullCycle);
}
TEST_F(HostileUpstreamTest, Hang) {
  Check({"hang", R"({"mode":"hang"})", kThreeSlow, true}, kFullCycle);
}
TEST_F(HostileUpstreamTest, SlowBeyondTheBudget) {
  Check({"slow 2 s", R"({"mode":"slow","latency_ms":2000})", kThreeSlow, true}, kFullCycle);
}
TEST_F(HostileUpstreamTest, ConnectionReset) {
  Check({"reset", R"({"mode":"reset"})", kThreeErrors}, kFullCycle);
}
TEST_F(HostileUpstreamTest, GarbageBody) {
  Check({"garbage (HTML as JSON)", R"({"mode":"garbage"})", kThreeErrors}, kFullCycle);
}
TEST_F(HostileUpstreamTest, TruncatedBody) {
  Check({"truncated", R"({"mode":"truncated"})", kThreeErrors}, kFullCycle);
}
TEST_F(HostileUpstreamTest, DrippedBody) {
  Check({"drip 4 B / 50 ms", R"({"mode":"drip","drip_bytes":4,"drip_interval_ms":50})", kThreeSlow,
         true},
        kFullCycle);
}
TEST_F(HostileUpstreamTest, FlapEveryThree) {
  // Three good answers, then three 502s: only then three failures in a row. The probe after the
  // cooldown gets a good answer again, so the breaker closes without a failed probe.
  Check({"flap every 3 (502)",
         R"({"mode":"flap","every":3,"status":502})",
         {"OK", "OK", "OK", "UPSTREAM_ERROR", "UPSTREAM_ERROR", "UPSTREAM_ERROR"},
         false,
         false},
        kShortCycle);
}
TEST_F(HostileUpstreamTest, CapacityOneWithFourAtOnce) {
  // One slot: of four decodes at once, one is served, three get vpic-sim's 503; a lone probe fits.
  Check({"capacity 1, 4 at once",
         R"({"mode":"capacity","capacity":1,"latency_ms":150})",
         {"OK", "UPSTREAM_ERROR", "UPSTREAM_ERROR", "UPSTREAM_ERROR"},
         false,
         false,
         4},
        kShortCycle);
}

// The same faults under window policies: the count of failures before the breaker opens follows
// the policy, and the rest of the cycle (fast rejection, a failed probe, recovery) is the same.
// The warm-up decode of each cycle is in the window too: with a count window of 4 (at least 4
// calls, half of them failed), its success and three failures open the breaker; with the time
// window (at least 3 calls, half of them slow), its success and two slow calls.
TEST_F(HostileUpstreamTest, Error503UnderACountWindow) {
  Check({"error 503", R"({"mode":"error","status":503})", kThreeErrors}, kFullCycle, kCountWindow);
}
TEST_F(HostileUpstreamTest, ResetUnderACountWindow) {
  Check({"reset", R"({"mode":"reset"})", kThreeErrors}, kFullCycle, kCountWindow);
}
TEST_F(HostileUpstreamTest, HangUnderATimeWindowWithSlowCalls) {
  Check({"hang", R"({"mode":"hang"})", kTwoSlow, true}, kFullCycle, kTimeWindowSlow);
}
TEST_F(HostileUpstreamTest, SlowUnderATimeWindowWithSlowCalls) {
  Check({"slow 2 s", R"({"mode":"slow","latency_ms":2000})", kTwoSlow, true}, kFullCycle,
        kTimeWindowSlow);
}
TEST_F(HostileUpstreamTest, FourHungAtOnceUnderATimeWindowWithSlowCalls) {
  // Four decodes hang at once: counted slow while still running, they open the breaker at
  // 200 ms; each is still answered at its budget, and the next decode is refused at once.
  Check({"hang, 4 at once", R"({"mode":"hang"})", std::vector<std::string>(4, "UPSTREAM_SLOW"),
         true, true, 4},
        kFullCycle, kTimeWindowSlow);
}

// Interim (1xx) answers before the real one (vpic-sim's `interim` mode). RFC 9110 requires a
// client to accept 1xx answers it did not ask for: each decode is served, the breaker stays
// CLOSED, and the pooled connection is reused rather than given up.
TEST_F(HostileUpstreamTest, EarlyHintsBeforeEveryAnswer) {
  Check({.name = "103 Early Hints before every answer",
         .control = R"({"mode":"interim","interim_status":103})",
         .answers = std::vector<std::string>(10, "OK"),
         .opens = false},
        "CLOSED");
  const json::value upstream = Status().at("upstream");
  EXPECT_GE(upstream.at("connections_reused").to_number<long>(), 8)
      << "the connection was not pooled after an exchange with an interim answer";
}

// A `100 Continue` at once and the answer 300 ms later: a client that took the interim answer as
// the final one failed the decode and pooled the connection, and the next decode on it read the
// late answer as its own, caching a model-year decode under the plain key. Every answer must be
// the one asked for: the VIN, and the model year (a Harley-Davidson VIN whose year code B reads
// 2011 plain and 1981 when asked), live and then from the cache.
TEST_F(HostileUpstreamTest, LateAnswerAfterContinueIsNeverAnotherDecodesAnswer) {
  StartSim();
  // The answer comes well inside the call's budget even in a sanitizer build: what is tested is
  // which answer a call reads, not how long it waits.
  StartGateway({"--call-timeout", "2s"});
  Fault(R"({"mode":"interim","interim_status":100,"latency_ms":100})");
  std::vector<std::string> wrong;
  int served = 0;
  int asked = 0;
  const auto ask = [&](const std::string& vin, int year) {
    ++asked;
    const HttpResult r =
        Get("/api/v1/vin/" + vin + (year != 0 ? fmt::format("?modelyear={}", year) : ""));
    const json::value body = Json(r);
    const std::string want_year = year == 0 ? "2011" : std::to_string(year);
    const std::string got_vin = Field(r, "vin");
    std::string got_year;
    if (const json::object* object = body.if_object()) {
      if (const json::value* vehicle = object->if_contains("vehicle"); vehicle != nullptr) {
        if (const json::value* decoded =
                vehicle->is_object() ? vehicle->get_object().if_contains("model_year") : nullptr;
            decoded != nullptr && decoded->is_string()) {
          got_year = std::string(decoded->get_string());
        }
      }
    }
    if (r.status == 200 && Field(r, "status") == "OK" && got_vin == vin && got_year == want_year) {
      ++served;
    } else {
      wrong.push_back(fmt::format("{} year {}: HTTP {} {} vin {} model_year {}", vin, year,
                                  r.status, Field(r, "status"), got_vin, got_year));
    }
  };
  for (int i = 0; i < 4; ++i) {
    const std::string vin = fmt::format("1HD1KHM18BB{:06d}", i);
    ask(vin, 1981);  // live
    ask(vin, 0);     // live: the plain key
    ask(vin, 1981);  // cached
    ask(vin, 0);     // cached
  }
  EXPECT_TRUE(wrong.empty()) << fmt::format("{}", fmt::join(wrong, "\n"));
  EXPECT_EQ(BreakerState(), "CLOSED");
  AddMatrixRow({"hostile upstream", "100 Continue at once, the answer 100 ms later",
                "consecutive 3, call timeout 2 s",
                "16 of 16 decodes OK with the VIN and model year asked (4 VINs: modelyear=1981, "
                "plain, each twice: live, then cached); breaker CLOSED",
                fmt::format("{} of {} as asked{}; breaker {}", served, asked,
                            wrong.empty() ? "" : "; first wrong: " + wrong.front(), BreakerState()),
                wrong.empty() && BreakerState() == "CLOSED"});
}

// Answers vpic-sim cannot make, from FakeUpstream.
TEST_F(HostileUpstreamTest, GiantAnswerJustUnderTheBodyCap) {
  // 30,000 fields in 1 MiB: a valid answer, served; ten VINs of it must not inflate the gateway
  // (each row is bounded before it is cached: the default bound holds).
  fake_ = std::make_unique<FakeUpstream>();
  Check({.name = "giant: 30,000 fields, just under 1 MiB (10 VINs)",
         .control = "giant",
         .answers = std::vector<std::string>(10, "OK"),
         .opens = false,
         .budget_scaled = true},
        "CLOSED");
}
TEST_F(HostileUpstreamTest, AnswerOverTheBodyCap) {
  fake_ = std::make_unique<FakeUpstream>();
  Check({.name = "oversize: 1.5 MiB answer", .control = "oversize", .answers = kThreeErrors},
        kFullCycle);
}
TEST_F(HostileUpstreamTest, DeeplyNestedAnswer) {
  fake_ = std::make_unique<FakeUpstream>();
  Check({.name = "deep: a field nested 100,000 arrays deep",
         .control = "deep",
         .answers = kThreeErrors},
        kFullCycle);
}

}  // namespace
}  // namespace reliability
