// The gateway as a process against hostile clients on raw sockets: slowloris, oversized request
// lines, headers and bodies, request smuggling, pipelining, half-closed connections, a client
// that never reads its answers, cross-site "simple" batches, and clients that stretch the rate
// limit (large batches, many addresses of one IPv6 /64). In each case the hostile connection is
// answered as the contract says (or cut off at `--client-timeout`), a well-behaved client is served
// quickly meanwhile, no descriptor stays behind (counted in /proc/PID/fd) and the upstream sees
// nothing it should not.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "reliability/reliability_support.h"
#include "vin_gateway/raw_client.h"

namespace reliability {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using fusebox::gateway::testing::Answers;
using fusebox::gateway::testing::Count;
using fusebox::gateway::testing::RawClient;
using fusebox::gateway::testing::StartsWith;

using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

constexpr double kClientTimeoutS = 1.0;  // --client-timeout of these tests
constexpr char kKnownVin[] = "1FTMW1T88MFA00001";

class HostileClientTest : public GatewayProcessTest {
 protected:
  void SetUp() override {
    GatewayProcessTest::SetUp();
    StartSim();
    StartGateway({"--client-timeout", "1s"});
    // One decode through the upstream, so that later decodes of it are cache hits and the
    // upstream connection pool has what it keeps; the descriptors counted after it are the
    // baseline every case returns to.
    ASSERT_EQ(Decode(kKnownVin).status, 200);
    baseline_fds_ = OpenDescriptors(gateway_->pid());
    ASSERT_GT(baseline_fds_, 0);
  }

  std::uint16_t port() const { return static_cast<std::uint16_t>(gateway_->port()); }

  // True once the gateway holds no more descriptors than at the baseline (an idle pooled
  // upstream connection may have closed meanwhile, never one more).
  bool DescriptorsBackToBaseline(double timeout_s = 5) const {
    return WaitUntil([&] { return OpenDescriptors(gateway_->pid()) <= baseline_fds_; }, timeout_s);
  }

  // A cache hit on a fresh connection, and how long it took.
  double HitSeconds() const {
    const HttpResult r = Decode(kKnownVin);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.seconds;
  }

  int baseline_fds_ = 0;
};

// 200 connections send a request's first line and one header, then drip a header line every
// 200 ms. The client timeout bounds the whole request, not the gap between bytes, so dripping
// buys nothing: each is answered 408 and closed at the timeout, while a decode on another
// connection is a fast cache hit throughout.
TEST_F(HostileClientTest, SlowlorisIsCutOffAtTheClientTimeoutWhileOthersAreServed) {
  constexpr int kConnections = 200;
  std::vector<std::unique_ptr<RawClient>> slow;
  const auto start = SteadyClock::now();
  for (int i = 0; i < kConnections; ++i) {
    slow.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(slow.back()->connected());
    slow.back()->Send(fmt::format("GET /api/v1/vin/{} HTTP/1.1\r\nHost: a\r\n", kKnownVin));
  }
  double worst_hit_s = 0;
  for (int drip = 0; drip < 3; ++drip) {
    for (auto& client : slow) {
      // The server may have cut the connection already: a failed send is fine here.
      (void)client->TrySend(fmt::format("X-Drip-{}: x\r\n", drip));
    }
    worst_hit_s = std::max(worst_hit_s, HitSeconds());
    std::this_thread::sleep_for(200ms);
  }
  int answered_408 = 0;
  int closed = 0;
  for (auto& client : slow) {
    const std::string answer = client->ReadToEnd();
    answered_408 += StartsWith(answer, "HTTP/1.1 408 ") ? 1 : 0;
    closed += client->closed() ? 1 : 0;
  }
  const double all_closed_s = SecondsSince(start);
  const bool fds_back = DescriptorsBackToBaseline();
  EXPECT_EQ(answered_408, kConnections);
  EXPECT_EQ(closed, kConnections);
  EXPECT_LT(all_closed_s, kClientTimeoutS + 1.0 + SlackS());
  EXPECT_LT(worst_hit_s, 0.1 + SlackS());
  EXPECT_TRUE(fds_back) << OpenDescriptors(gateway_->pid()) << " vs " << baseline_fds_;
  // Each access line follows its 408 within a loop turn (the log is written per turn).
  const auto logged = [&] {
    return Count(gateway_->Log(), "the request was still incomplete at the client timeout");
  };
  WaitUntil([&] { return logged() >= static_cast<std::size_t>(kConnections); }, 5 * TimeScale());
  EXPECT_EQ(logged(), static_cast<std::size_t>(kConnections));
  AddMatrixRow({"hostile client", "slowloris: 200 connections drip headers every 200 ms",
                "client timeout 1 s",
                "each 408 and closed at the timeout; a cache hit meanwhile < 100 ms; descriptors "
                "back to the baseline",
                fmt::format("{}/{} got 408, {} closed, all by {:.2f} s; slowest hit {:.0f} ms; "
                            "descriptors {}",
                            answered_408, kConnections, closed, all_closed_s, worst_hit_s * 1000,
                            fds_back ? "back to the baseline" : "LEAKED"),
                answered_408 == kConnections && closed == kConnections && fds_back &&
                    worst_hit_s < 0.1 + SlackS()});
}

// Request lines, headers and bodies over the limits: each answered with its status and closed,
// and the gateway's memory does not grow with what was offered.
TEST_F(HostileClientTest, OversizedInputsAreRefusedAndClosed) {
  struct Case {
    std::string what;
    std::string bytes;
    std::string status;  // the status line's start
  };
  const std::string big_target = "/api/v1/vin/" + std::string(10 * 1024, 'A');
  std::string many_headers;
  for (int i = 0; i < 2000; ++i) {
    many_headers += fmt::format("X-{}: y\r\n", i);
  }
  const std::string batch_path = "POST /api/v1/vin/batch HTTP/1.1\r\nHost: a\r\n";
  std::string over_50_vins = R"({"vins": [)";
  for (int i = 0; i < 51; ++i) {
    over_50_vins += fmt::format(R"({}"{}")", i == 0 ? "" : ",", UniqueVin('X', i));
  }
  over_50_vins += "]}";
  const std::vector<Case> cases = {
      {"request line of 10 KiB", "GET " + big_target + " HTTP/1.1\r\nHost: a\r\n\r\n",
       "HTTP/1.1 431 "},
      {"one header of 9 KiB",
       "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(9 * 1024, 'b') + "\r\n\r\n",
       "HTTP/1.1 431 "},
      {"2,000 small headers", "GET /healthz HTTP/1.1\r\nHost: a\r\n" + many_headers + "\r\n",
       "HTTP/1.1 431 "},
      {"body of 70,000 bytes",
       batch_path + "Content-Length: 70000\r\n\r\n" + std::string(70000, '{'), "HTTP/1.1 413 "},
      {"Content-Length of 2^64", batch_path + "Content-Length: 18446744073709551616\r\n\r\n",
       "HTTP/1.1 4"},
      {"negative Content-Length", batch_path + "Content-Length: -1\r\n\r\n", "HTTP/1.1 400 "},
      {"chunked body over 64 KiB",
       batch_path + "Transfer-Encoding: chunked\r\n\r\n" + fmt::format("{:x}\r\n", 70000) +
           std::string(70000, '[') + "\r\n0\r\n\r\n",
       "HTTP/1.1 413 "},
      {"batch of 51 VINs",
       batch_path +
           fmt::format("Content-Type: application/json\r\nContent-Length: {}\r\nConnection: "
                       "close\r\n\r\n",
                       over_50_vins.size()) +
           over_50_vins,
       "HTTP/1.1 400 "},
  };
  const long rss_before = ResidentKib(gateway_->pid());
  const long upstream_before = UpstreamCalls();
  std::vector<std::string> failures;
  for (int round = 0; round < 20; ++round) {  // repeated: memory must not grow with each
    for (const Case& c : cases) {
      RawClient client(port());
      ASSERT_TRUE(client.connected());
      (void)client.TrySend(c.bytes);  // the server may refuse before it has read everything
      const std::string answer = client.ReadToEnd();
      if (!StartsWith(answer, c.status) || Answers(answer) != 1 || !client.closed()) {
        failures.push_back(c.what + ": " + answer.substr(0, answer.find("\r\n")));
      }
    }
  }
  const long rss_after = ResidentKib(gateway_->pid());
  const bool fds_back = DescriptorsBackToBaseline();
  const double hit_s = HitSeconds();
  EXPECT_TRUE(failures.empty()) << failures.front();
  EXPECT_EQ(UpstreamCalls(), upstream_before);
  EXPECT_TRUE(fds_back);
  const long growth_kib = rss_after - rss_before;
  EXPECT_LT(growth_kib, static_cast<long>(8 * 1024 * MemoryScale()));
  AddMatrixRow({"hostile client",
                "oversized inputs x20: 10 KiB request line, 9 KiB header, 2,000 headers, 70 kB "
                "body, Content-Length 2^64 and -1, 70 kB chunked body, 51-VIN batch",
                "default limits (8 KiB head, 64 KiB body, 50 VINs)",
                "431 / 431 / 431 / 413 / 4xx / 400 / 413 / 400, each closed; no upstream call; "
                "RSS growth < 8 MiB; descriptors back",
                fmt::format("{} of {} answered as expected; {} upstream calls; RSS {:+} KiB; "
                            "descriptors {}; a hit after {:.0f} ms",
                            20 * cases.size() - failures.size(), 20 * cases.size(),
                            UpstreamCalls() - upstream_before, growth_kib,
                            fds_back ? "back" : "LEAKED", hit_s * 1000),
                failures.empty() && fds_back});
}

// Framing the gateway must refuse rather than guess (RFC 9112 6.1, 6.3): each is answered 400
// and closed, and the request hidden in the "body" never runs (vpic-sim counts no call).
TEST_F(HostileClientTest, SmugglingVariantsNeverReachTheUpstream) {
  const std::string smuggled =
      fmt::format("GET /api/v1/vin/{} HTTP/1.1\r\nHost: a\r\n\r\n", UniqueVin('S', 1));
  const std::string head = "POST /api/v1/vin/batch HTTP/1.1\r\nHost: a\r\n";
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"TE chunked, identity", head + "Transfer-Encoding: chunked, identity\r\n\r\n"},
      {"TE identity", head + "Transfer-Encoding: identity\r\n\r\n"},
      {"TE xchunked", head + "Transfer-Encoding: xchunked\r\n\r\n"},
      {"TE chunked twice",
       head + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"},
      {"TE and Content-Length",
       head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
      {"two Content-Lengths", head + "Content-Length: 0\r\nContent-Length: 5\r\n\r\n"},
      {"Content-Length +0", head + "Content-Length: +0\r\n\r\n"},
      {"TE in HTTP/1.0",
       "POST /api/v1/vin/batch HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
      // Folded (obs-fold), each followed by a whole body: a parser that unfolds reads the framing
      // one way, a peer that does not the other.
      {"TE folded onto a second line", head + "Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"},
      {"TE folded after a tab", head + "Transfer-Encoding:\r\n\tchunked\r\n\r\n0\r\n\r\n"},
      {"CL folded onto a second line", head + "Content-Length:\r\n 2\r\n\r\n{}"},
      {"space before the colon", head + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n"},
  };
  const long upstream_before = UpstreamCalls();
  std::vector<std::string> failures;
  for (const auto& [what, bytes] : variants) {
    RawClient client(port());
    ASSERT_TRUE(client.connected());
    (void)client.TrySend(bytes + smuggled);
    const std::string answer = client.ReadToEnd();
    if (!StartsWith(answer, "HTTP/1.1 400 ") || Answers(answer) != 1 || !client.closed()) {
      failures.push_back(what + ": " + answer.substr(0, answer.find("\r\n")));
    }
  }
  const long upstream_calls = UpstreamCalls() - upstream_before;
  const bool fds_back = DescriptorsBackToBaseline();
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_EQ(upstream_calls, 0);
  EXPECT_TRUE(fds_back);
  AddMatrixRow({"hostile client",
                "smuggling: TE `chunked, identity`, `identity`, `xchunked`, chunked twice, TE + "
                "CL, two CLs, CL `+0`, TE in HTTP/1.0, TE folded (SP, HTAB), CL folded, space "
                "before the colon",
                "defaults",
                "each 400, one answer, closed; the hidden request never reaches the upstream",
                fmt::format("{} of {} refused and closed; {} upstream calls",
                            variants.size() - failures.size(), variants.size(), upstream_calls),
                failures.empty() && upstream_calls == 0 && fds_back});
}

// A VIN path that holds, percent-encoded, U+009B (CSI: a terminal starts an escape sequence),
// U+2028 (a line break to log viewers), ESC and a line feed: the text access line holds their
// escapes, never the raw bytes, and stays one line.
TEST_F(HostileClientTest, ControlCharactersInAVinAreEscapedInTheTextLog) {
  const std::string marker = "LOGINJ";
  const HttpResult r = Get("/api/v1/vin/" + marker + "%C2%9B31m%E2%80%A8%1B%0Aforged=1");
  EXPECT_EQ(r.status, 422) << r.body;
  std::string line;
  WaitUntil([&] {
    const std::string log = gateway_->Log();
    const std::size_t at = log.find("vin=\"" + marker);
    if (at == std::string::npos) {
      return false;
    }
    const std::size_t begin = log.rfind('\n', at) + 1;  // npos + 1 == 0: the first line
    line = log.substr(begin, log.find('\n', at) - begin);
    return true;
  });
  const bool escaped =
      line.find(R"(vin=")" + marker + R"(\u009b31M\u2028\x1b\x0aFORGED=1")") != std::string::npos;
  const bool raw = line.find("\xc2\x9b") != std::string::npos ||
                   line.find("\xe2\x80\xa8") != std::string::npos ||
                   line.find('\x1b') != std::string::npos;
  EXPECT_TRUE(escaped) << line << "\n" << gateway_->Log();
  EXPECT_FALSE(raw) << line;
  AddMatrixRow({"hostile client",
                "log injection: a VIN path with %C2%9B (CSI), %E2%80%A8 (LS), %1B, %0A",
                "--log-format text (default)",
                "422; the access line holds the escapes \\u009b \\u2028 \\x1b \\x0a, no raw byte",
                fmt::format("{}; escapes {}; raw bytes {}", r.status,
                            escaped ? "written" : "MISSING", raw ? "WRITTEN" : "none"),
                r.status == 422 && escaped && !raw});
}

// Ten requests written at once (hits, misses that go upstream, a HEAD, a health check) are
// answered in the order asked, each whole.
TEST_F(HostileClientTest, PipelinedRequestsAreAnsweredInOrder) {
  std::vector<std::string> targets;
  std::string bytes;
  for (int i = 0; i < 10; ++i) {
    const std::string vin = i % 2 == 0 ? std::string(kKnownVin) : UniqueVin('P', i);
    const std::string method = i == 4 ? "HEAD" : "GET";
    const std::string target = i == 6 ? "/healthz" : "/api/v1/vin/" + vin;
    targets.push_back(method + " " + target);
    bytes += fmt::format("{} {} HTTP/1.1\r\nHost: a\r\n{}\r\n", method, target,
                         i == 9 ? "Connection: close\r\n" : "");
  }
  RawClient client(port());
  ASSERT_TRUE(client.connected());
  client.Send(bytes);
  const std::string answer = client.ReadToEnd();
  EXPECT_TRUE(client.closed());
  EXPECT_EQ(Answers(answer), 10U) << answer;
  EXPECT_EQ(Count(answer, "HTTP/1.1 200 OK\r\n"), 10U);
  // The VINs of the GET decodes appear in the order asked (the HEAD has no body).
  std::size_t at = 0;
  bool in_order = true;
  for (int i = 0; i < 10; ++i) {
    if (i == 4 || i == 6) {
      continue;
    }
    const std::string vin = i % 2 == 0 ? std::string(kKnownVin) : UniqueVin('P', i);
    const std::size_t found = answer.find("\"vin\":\"" + vin + "\"", at);
    in_order = in_order && found != std::string::npos;
    at = found == std::string::npos ? at : found + 1;
  }
  EXPECT_TRUE(in_order) << answer;
  EXPECT_TRUE(DescriptorsBackToBaseline());
  AddMatrixRow({"hostile client",
                "pipelining: 10 requests in one write (hits, upstream misses, HEAD, /healthz)",
                "defaults", "10 answers, each 200, in the order asked",
                fmt::format("{} answers, {} of them 200; order {}", Answers(answer),
                            Count(answer, "HTTP/1.1 200 OK\r\n"), in_order ? "kept" : "BROKEN"),
                Answers(answer) == 10 && in_order});
}

// A client that sends its requests and shuts its sending side down (half-close) still gets
// every answer, even one that waits for the upstream, and then the gateway closes too.
TEST_F(HostileClientTest, HalfClosedClientGetsItsAnswers) {
  Fault(R"({"mode": "slow", "latency_ms": 200})");
  const std::string miss = UniqueVin('H', 1);
  RawClient client(port());
  ASSERT_TRUE(client.connected());
  client.Send(fmt::format("GET /api/v1/vin/{} HTTP/1.1\r\nHost: a\r\n\r\n", kKnownVin) +
              fmt::format("GET /api/v1/vin/{} HTTP/1.1\r\nHost: a\r\n\r\n", miss));
  client.ShutdownWrite();
  const std::string answer = client.ReadToEnd();
  EXPECT_TRUE(client.closed());
  EXPECT_EQ(Count(answer, "HTTP/1.1 200 OK\r\n"), 2U) << answer;
  EXPECT_NE(answer.find(miss), std::string::npos) << answer;
  EXPECT_TRUE(DescriptorsBackToBaseline());
  EXPECT_EQ(Count(gateway_->Log(), "could not be written"), 0U);
  AddMatrixRow({"hostile client",
                "half-closed: two requests, then SHUT_WR (one goes upstream, "
                "200 ms)",
                "defaults", "both answered 200, then closed by the gateway",
                fmt::format("{} answers 200; closed {}", Count(answer, "HTTP/1.1 200 OK\r\n"),
                            client.closed() ? "yes" : "no"),
                Count(answer, "HTTP/1.1 200 OK\r\n") == 2 && client.closed()});
}

// A client asks for the 27 KB script a thousand times in one write and never reads: once the
// socket buffers are full, the gateway's write waits, and at the client timeout the connection is
// cut off with a log line; meanwhile other clients are served quickly.
TEST_F(HostileClientTest, ClientThatNeverReadsIsCutOffAtTheTimeout) {
  std::string bytes;
  for (int i = 0; i < 1000; ++i) {
    bytes += "GET /assets/app.js HTTP/1.1\r\nHost: a\r\n\r\n";
  }
  const auto start = SteadyClock::now();
  RawClient client(port(), 5s, 4096);
  ASSERT_TRUE(client.connected());
  client.Send(bytes);
  double worst_hit_s = 0;
  bool cut_off = false;
  while (!cut_off && SecondsSince(start) < kClientTimeoutS * 3 + SlackS()) {
    worst_hit_s = std::max(worst_hit_s, HitSeconds());
    cut_off = Count(gateway_->Log(), "the client took no answer within the write timeout") > 0;
  }
  const double cut_off_s = SecondsSince(start);
  const bool fds_back = DescriptorsBackToBaseline();
  EXPECT_TRUE(cut_off) << gateway_->Log();
  EXPECT_TRUE(fds_back);
  EXPECT_LT(worst_hit_s, 0.1 + SlackS());
  // What the client finds when it finally reads: some answers, then the end of the connection.
  const std::string answer = client.ReadToEnd();
  EXPECT_TRUE(client.closed());
  EXPECT_LT(Answers(answer), 1000U);
  AddMatrixRow({"hostile client",
                "never reads: 1,000 pipelined GET /assets/app.js (27 MB of answers), 4 KiB receive "
                "buffer",
                "client timeout 1 s (bounds each answer's write)",
                "cut off with a log line once a write stalls for the timeout; hits meanwhile "
                "< 100 ms; descriptors back",
                fmt::format("cut off {} after {:.2f} s ({} answers read afterwards); slowest hit "
                            "{:.0f} ms; descriptors {}",
                            cut_off ? "with the log line" : "NOT", cut_off_s, Answers(answer),
                            worst_hit_s * 1000, fds_back ? "back" : "LEAKED"),
                cut_off && fds_back && worst_hit_s < 0.1 + SlackS()});
}

// Exact bytes of a POST with `headers` ("Name: value\r\n" lines) and `body` on a connection of its
// own; the whole answer (head and body).
std::string RawPost(std::uint16_t port, const std::string& target, const std::string& headers,
                    const std::string& body) {
  RawClient client(port);
  EXPECT_TRUE(client.connected());
  client.Send(
      fmt::format("POST {} HTTP/1.1\r\nHost: a\r\n{}Content-Length: {}\r\nConnection: "
                  "close\r\n\r\n{}",
                  target, headers, body.size(), body));
  return client.ReadToEnd();
}

// The JSON body of a raw answer's `status` ("" when there is none).
std::string RawStatusField(const std::string& answer) {
  const std::size_t end = answer.find("\r\n\r\n");
  HttpResult as_result;
  as_result.body = end == std::string::npos ? "" : answer.substr(end + 4);
  return Field(as_result, "status");
}

// A page on another site can make its visitors' browsers POST a "simple" request here (text/plain,
// form-encoded, multipart: no CORS preflight) and so spend upstream calls on their addresses. The
// batch route takes only application/json, which a browser sends to another origin only after a
// preflight the gateway never grants.
TEST_F(HostileClientTest, BatchWithTextPlainContentTypeIsRefused) {
  std::string vins;
  for (int i = 0; i < 50; ++i) {
    vins += fmt::format(R"({}"{}")", i == 0 ? "" : ",", UniqueVin('C', i));
  }
  const std::string json_body = R"({"vins": [)" + vins + "]}";
  struct Case {
    std::string what;
    std::string headers;
    std::string body;
  };
  const std::vector<Case> cases = {
      {"text/plain (what fetch and a form with enctype=text/plain send)",
       "Content-Type: text/plain;charset=UTF-8\r\n", json_body},
      {"form-encoded", "Content-Type: application/x-www-form-urlencoded\r\n",
       "vins=" + UniqueVin('C', 1)},
      {"form-encoded, a JSON body", "Content-Type: application/x-www-form-urlencoded\r\n",
       json_body},
      {"multipart", "Content-Type: multipart/form-data; boundary=b\r\n",
       "--b\r\nContent-Disposition: form-data; name=\"vins\"\r\n\r\n" + json_body +
           "\r\n--b--\r\n"},
      {"no Content-Type", "", json_body},
      {"two Content-Types", "Content-Type: application/json\r\nContent-Type: text/plain\r\n",
       json_body},
  };
  const long upstream_before = UpstreamCalls();
  std::vector<std::string> failures;
  for (const Case& c : cases) {
    const std::string answer = RawPost(port(), "/api/v1/vin/batch", c.headers, c.body);
    if (!StartsWith(answer, "HTTP/1.1 415 ") ||
        RawStatusField(answer) != "UNSUPPORTED_MEDIA_TYPE" ||
        answer.find("\r\nContent-Type: application/json\r\n") == std::string::npos) {
      failures.push_back(c.what + ": " + answer.substr(0, answer.find("\r\n")));
    }
  }
  const long upstream_calls = UpstreamCalls() - upstream_before;
  // The same batch as JSON is served: the route works, only the media type was refused.
  const std::string json_answer = RawPost(
      port(), "/api/v1/vin/batch", "Content-Type: Application/JSON; charset=utf-8\r\n", json_body);
  const bool json_served = StartsWith(json_answer, "HTTP/1.1 200 ");
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_EQ(upstream_calls, 0);
  EXPECT_TRUE(json_served) << json_answer.substr(0, 200);
  AddMatrixRow({"hostile client",
                "cross-site simple requests: a 50-VIN batch as text/plain, form-encoded (twice), "
                "multipart, without Content-Type, with two Content-Types",
                "defaults",
                "each 415 UNSUPPORTED_MEDIA_TYPE (JSON body), no upstream call; the same batch as "
                "`Application/JSON; charset=utf-8` is served",
                fmt::format("{} of {} refused 415; {} upstream calls; JSON batch {}",
                            cases.size() - failures.size(), cases.size(), upstream_calls,
                            json_served ? "served 200" : "NOT served"),
                failures.empty() && upstream_calls == 0 && json_served});
}

// JSON answers echo their input (a VIN, a Content-Type): every answer says nosniff, so that no
// browser reads one as a script or a page; the page has a policy it runs under.
TEST_F(HostileClientTest, EveryAnswerIsSentWithNosniffAndThePageWithAPolicy) {
  std::vector<std::string> failures;
  const auto check = [&](const std::string& what, const HttpResult& r, int status) {
    const auto it = r.headers.find("x-content-type-options");
    if (r.status != status || it == r.headers.end() || it->second != "nosniff") {
      failures.push_back(fmt::format("{}: {} {}", what, r.status,
                                     it == r.headers.end() ? "no nosniff" : it->second));
    }
  };
  check("decode", Decode(kKnownVin), 200);
  check("invalid VIN (echoed)", Get("/api/v1/vin/%3Cscript%3Ealert(1)%3C%2Fscript%3E"), 422);
  check("unknown route", Get("/nope"), 404);
  check("status", Get("/status"), 200);
  check("metrics", Get("/metrics"), 200);
  check("bad batch", Http(port(), "POST", "/api/v1/vin/batch", "<html>"), 400);
  const HttpResult page = Get("/");
  check("page", page, 200);
  check("script", Get("/assets/app.js"), 200);
  check("style sheet", Get("/assets/style.css"), 200);
  const auto policy = page.headers.find("content-security-policy");
  const bool strict_policy = policy != page.headers.end() &&
                             policy->second.find("script-src 'self'") != std::string::npos &&
                             policy->second.find("unsafe-inline") == std::string::npos;
  // The server's own refusals, made before any route: 400, 431, 415 as raw exchanges.
  const auto raw_check = [&](const std::string& what, const std::string& bytes,
                             const std::string& status_line) {
    RawClient client(port());
    ASSERT_TRUE(client.connected());
    (void)client.TrySend(bytes);
    const std::string answer = client.ReadToEnd();
    const std::string head = answer.substr(0, answer.find("\r\n\r\n") + 2);
    if (!StartsWith(answer, status_line) ||
        Count(head, "\r\nX-Content-Type-Options: nosniff\r\n") != 1) {
      failures.push_back(what + ": " + answer.substr(0, answer.find("\r\n")));
    }
  };
  raw_check("not HTTP", "HELLO\r\n\r\n", "HTTP/1.1 400 ");
  raw_check("9 KiB header",
            "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(9 * 1024, 'b') + "\r\n\r\n",
            "HTTP/1.1 431 ");
  raw_check("text/plain batch",
            "POST /api/v1/vin/batch HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\n"
            "Content-Length: 2\r\nConnection: close\r\n\r\n{}",
            "HTTP/1.1 415 ");
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_TRUE(strict_policy) << (policy == page.headers.end() ? "none" : policy->second);
  AddMatrixRow({"hostile client",
                "nosniff and CSP: a decode, a 422 echoing `<script>`, 404, /status, /metrics, a "
                "400 batch, the page, its script and style sheet; the server's own 400, 431, and "
                "a 415",
                "defaults",
                "`X-Content-Type-Options: nosniff` once on every answer; the page's "
                "Content-Security-Policy allows only its own scripts, nothing inline",
                fmt::format("{} answers without nosniff; page policy {}", failures.size(),
                            strict_policy ? "strict" : "MISSING OR LAX"),
                failures.empty() && strict_policy});
}

// Rate limits that stretch: a batch used to pay at most the bucket size, and every address of an
// IPv6 /64 had a bucket of its own. The gateway here has the limit on (1 token/s, bucket of 2).
class StretchedBudgetTest : public GatewayProcessTest {
 protected:
  void SetUp() override {
    GatewayProcessTest::SetUp();
    StartSim();
  }

  long BatchVins() const {
    const json::value stats = SimStats();
    return stats.is_object() ? static_cast<long>(stats.at("batch_vins").to_number<std::int64_t>())
                             : -1;
  }
};

// Five batches of 50 distinct uncached VINs sent at once by one client: only the bucket's 2 tokens
// (plus what refills while they run) go upstream; every other VIN is RATE_LIMITED with its
// Retry-After, and each batch is still answered 200 with 50 results.
TEST_F(StretchedBudgetTest, FiveFiftyVinBatchesAtOnceSpendOnlyTheBucket) {
  StartGateway({"--client-rate", "1", "--client-burst", "2"});
  constexpr int kBatches = 5;
  constexpr int kVins = 50;
  const long vins_before = BatchVins();
  const long calls_before = UpstreamCalls();
  std::vector<HttpResult> answers(kBatches);
  const auto start = SteadyClock::now();
  {
    std::vector<std::thread> senders;
    for (int b = 0; b < kBatches; ++b) {
      senders.emplace_back([&, b] {
        std::string body = R"({"vins": [)";
        for (int i = 0; i < kVins; ++i) {
          body += fmt::format(R"({}"{}")", i == 0 ? "" : ",", UniqueVin('B', b * 100 + i));
        }
        body += "]}";
        answers[static_cast<std::size_t>(b)] =
            Http(gateway_->port(), "POST", "/api/v1/vin/batch", body);
      });
    }
    for (std::thread& sender : senders) {
      sender.join();
    }
  }
  const double elapsed_s = SecondsSince(start);
  const long upstream_vins = BatchVins() - vins_before;
  const long upstream_calls = UpstreamCalls() - calls_before;
  int live = 0;
  int limited = 0;
  int limited_with_retry = 0;
  int answered = 0;
  for (const HttpResult& r : answers) {
    const json::value body = Json(r);
    if (r.status != 200 || !body.is_object()) {
      continue;
    }
    ++answered;
    for (const json::value& result : body.at("results").as_array()) {
      const json::object& o = result.as_object();
      if (o.at("status") == "OK" && o.contains("source") && o.at("source") == "live") {
        ++live;
      } else if (o.at("status") == "RATE_LIMITED") {
        ++limited;
        limited_with_retry += o.contains("retry_after_s") ? 1 : 0;
      }
    }
  }
  // The bucket (2) and what refills at 1 token/s while the batches run, generously rounded up.
  const long allowed = 2 + static_cast<long>(std::ceil(elapsed_s)) + 1;
  EXPECT_EQ(answered, kBatches);
  EXPECT_GE(upstream_vins, 2);
  EXPECT_LE(upstream_vins, allowed);
  EXPECT_EQ(live, upstream_vins);
  EXPECT_EQ(live + limited, kBatches * kVins);
  EXPECT_EQ(limited_with_retry, limited);
  AddMatrixRow(
      {"hostile client",
       "rate limit stretched by batches: five 50-VIN batches (250 distinct misses) at "
       "once from one client",
       "--client-rate 1 --client-burst 2",
       "at most the bucket (2) plus the refill go upstream; every other VIN "
       "RATE_LIMITED with retry_after_s; each batch 200 with 50 results",
       fmt::format("{} VINs upstream in {} call(s) over {:.2f} s (allowed {}); {} "
                   "RATE_LIMITED; {}/{} batches answered",
                   upstream_vins, upstream_calls, elapsed_s, allowed, limited, answered, kBatches),
       answered == kBatches && upstream_vins <= allowed && upstream_vins >= 2 &&
           live + limited == kBatches * kVins});
}

// Forty addresses of one IPv6 /64, forwarded by a trusted proxy, used to get forty buckets. They
// share one now (the default --client-ipv6-prefix 64); another /64 and an IPv4 client have their
// own.
TEST_F(StretchedBudgetTest, FortyAddressesOfOneSlash64ShareOneBucket) {
  StartGateway({"--client-rate", "1", "--client-burst", "2", "--trusted-proxy", "127.0.0.1/32"});
  constexpr int kAddresses = 40;
  const long calls_before = UpstreamCalls();
  int ok = 0;
  int limited = 0;
  const auto start = SteadyClock::now();
  for (int i = 1; i <= kAddresses; ++i) {
    const HttpResult r =
        Http(gateway_->port(), "GET", "/api/v1/vin/" + UniqueVin('V', i), "",
             fmt::format("X-Forwarded-For: 2001:db8:1:2:{:x}::{:x}\r\n", i, i * 997));
    ok += r.status == 200 ? 1 : 0;
    limited += r.status == 429 && Field(r, "status") == "RATE_LIMITED" ? 1 : 0;
  }
  const double elapsed_s = SecondsSince(start);
  const long upstream_calls = UpstreamCalls() - calls_before;
  const long allowed = 2 + static_cast<long>(std::ceil(elapsed_s)) + 1;
  // Other clients keep their own budgets: the next /64, an IPv4 address.
  const int other_net = Http(gateway_->port(), "GET", "/api/v1/vin/" + UniqueVin('W', 1), "",
                             "X-Forwarded-For: 2001:db8:1:3::1\r\n")
                            .status;
  const int other_v4 = Http(gateway_->port(), "GET", "/api/v1/vin/" + UniqueVin('W', 2), "",
                            "X-Forwarded-For: 198.51.100.7\r\n")
                           .status;
  // The log still names each address (its lines are written a loop turn later).
  const auto logged = [&] { return Count(gateway_->Log(), "client=2001:db8:1:2:"); };
  WaitUntil([&] { return logged() >= static_cast<std::size_t>(kAddresses); }, 5 * TimeScale());
  const std::size_t logged_addresses = logged();
  EXPECT_GE(ok, 2);
  EXPECT_LE(ok, allowed);
  EXPECT_EQ(ok + limited, kAddresses);
  EXPECT_EQ(upstream_calls, ok);
  EXPECT_EQ(other_net, 200);
  EXPECT_EQ(other_v4, 200);
  EXPECT_EQ(logged_addresses, static_cast<std::size_t>(kAddresses));
  AddMatrixRow(
      {"hostile client",
       "rate limit stretched by addresses: 40 addresses of one IPv6 /64 via a trusted "
       "proxy's X-Forwarded-For, each decoding a distinct uncached VIN",
       "--client-rate 1 --client-burst 2 --trusted-proxy 127.0.0.1/32 (IPv6 prefix 64)",
       "one bucket for the /64: at most 2 plus the refill decoded, the rest 429 "
       "RATE_LIMITED; another /64 and an IPv4 client served; the log keeps each address",
       fmt::format("{} decoded, {} rate-limited over {:.2f} s (allowed {}); other /64 "
                   "{}, IPv4 {}; {} log lines with the full address",
                   ok, limited, elapsed_s, allowed, other_net, other_v4, logged_addresses),
       ok <= allowed && ok + limited == kAddresses && other_net == 200 && other_v4 == 200});
}

}  // namespace
}  // namespace reliability
