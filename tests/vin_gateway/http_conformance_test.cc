// HttpServer in process on a loopback port, driven by a hostile or sloppy client over a raw
// socket: the exact bytes written and the exact bytes answered. Request framing (RFC 9112:
// Transfer-Encoding, obs-fold, Host, HTTP/1.x versions), HEAD, 100-continue, client timeouts,
// bounded log fields and the log line of a request cut off at the end of the shutdown grace
// period; and with the real Router behind the server, the request target's absolute form and the
// admin bearer scheme as clients write them.

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/log_format.h"
#include "fusebox/registry.h"
#include "fusebox/testing/manual_clock.h"
#include "fusebox/thread_annotations.h"
#include "http/access_log.h"
#include "http/admin_route.h"
#include "http/http_server.h"
#include "http/router.h"
#include "http/transport_status.h"
#include "service/decode_service.h"
#include "service/gateway_metrics.h"
#include "service/rate_limiter.h"
#include "service/upstream_limits.h"
#include "vin_gateway/fake_vpic_client.h"
#include "vin_gateway/manual_wall_clock.h"
#include "vin_gateway/raw_client.h"

namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using fusebox::gateway::AccessRecord;
using fusebox::gateway::HttpRequest;
using fusebox::gateway::HttpResponse;

using fusebox::gateway::testing::Answers;
using fusebox::gateway::testing::Count;
using fusebox::gateway::testing::RawClient;
using fusebox::gateway::testing::StartsWith;

// The server on its own io_context and thread. Its handler answers 200 {"ok":true} and records
// what it saw; "/big" answers 1 MiB; "/post-only" answers 405 (with a body and Allow) to anything
// but POST, as the router does; "/slow" waits until the fixture lets it go. "/at-once..." is
// answered without a coroutine, as the router answers a fresh hit (with a shared body):
// "/at-once-huge" 32 MiB (more than any socket buffers), "/at-once-throw" by an exception.
class ConformanceTest : public ::testing::Test {
 protected:
  net::awaitable<HttpResponse> AnswerLater(HttpRequest request) {
    if (request.target == "/slow") {
      slow_entered_ = true;
      co_await slow_gate_.async_wait(net::as_tuple(net::use_awaitable));
    }
    if (request.target == "/post-only" && request.method != "POST") {
      HttpResponse refused =
          fusebox::gateway::ErrorResponse(fusebox::gateway::TransportStatus::kMethodNotAllowed);
      refused.headers.emplace_back("Allow", "POST");
      co_return refused;
    }
    HttpResponse response;
    response.body = request.target == "/big" ? std::string(1 << 20, 'x') : R"({"ok":true})";
    response.log_status = "OK";
    co_return response;
  }

  void Start(fusebox::gateway::HttpServerOptions options = {.host = "127.0.0.1", .port = 0}) {
    options.host = "127.0.0.1";
    options.port = 0;
    auto handler = [this](HttpRequest request) -> fusebox::gateway::HandlerResult {
      {
        fusebox::Locked lock(mu_);
        seen_.push_back(request.method + " " + request.target + " " + request.body);
      }
      if (request.target.starts_with("/at-once")) {
        if (request.target == "/at-once-throw") {
          throw std::runtime_error("the handler failed before it awaited anything");
        }
        HttpResponse response;
        response.shared_body = std::make_shared<const std::string>(
            request.target == "/at-once-huge" ? std::string(std::size_t{32} << 20, 'x')
                                              : R"({"ok":true})");
        response.log_status = "OK";
        return response;
      }
      return AnswerLater(std::move(request));
    };
    auto created = fusebox::gateway::HttpServer::Create(io_, options, handler,
                                                        [this](const AccessRecord& record) {
                                                          fusebox::Locked lock(mu_);
                                                          records_.push_back(record);
                                                        });
    ASSERT_TRUE(created) << created.error();
    server_ = std::move(*created);
    server_->Start();
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    if (!server_) {
      return;
    }
    server_->BeginShutdown();
    net::post(io_, [this] { slow_gate_.cancel(); });
    guard_.reset();
    thread_.join();
  }

  std::uint16_t port() const { return server_->port(); }

  std::vector<std::string> Seen() {
    fusebox::Locked lock(mu_);
    return seen_;
  }
  std::vector<AccessRecord> Records() {
    fusebox::Locked lock(mu_);
    return records_;
  }
  // The access log records, once there are `n` (the line is written after the answer).
  std::vector<AccessRecord> WaitForRecords(std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (Records().size() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    return Records();
  }

  net::io_context io_{1};
  net::executor_work_guard<net::io_context::executor_type> guard_ = net::make_work_guard(io_);
  net::steady_timer slow_gate_{io_, std::chrono::hours(1)};
  std::atomic<bool> slow_entered_{false};
  std::unique_ptr<fusebox::gateway::HttpServer> server_;
  std::thread thread_;
  fusebox::Mutex mu_;
  std::vector<std::string> seen_ FUSEBOX_GUARDED_BY(mu_);
  std::vector<AccessRecord> records_ FUSEBOX_GUARDED_BY(mu_);
};

TEST_F(ConformanceTest, TransferEncodingNotEndingInChunkedIs400AndCloses) {
  Start();
  for (const std::string coding :
       {"chunked, identity", "gzip, identity", "xchunked", "identity", "gzip, chunked"}) {
    RawClient client(port());
    ASSERT_TRUE(client.connected());
    // The "body" is a second request: smuggled, if the first were taken as having no body.
    client.Send("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: " + coding +
                "\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n");
    const std::string answer = client.ReadToEnd();
    EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 400 Bad Request\r\n")) << coding << "\n" << answer;
    EXPECT_NE(answer.find("Connection: close\r\n"), std::string::npos) << answer;
    EXPECT_EQ(Answers(answer), 1U) << answer;
    EXPECT_TRUE(client.closed()) << coding;
  }
  EXPECT_TRUE(Seen().empty());
  // Two Transfer-Encoding fields, and Transfer-Encoding in HTTP/1.0, are refused too.
  for (const std::string head :
       {"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
        "POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n"}) {
    RawClient client(port());
    client.Send(head + "\r\n0\r\n\r\n");
    EXPECT_TRUE(StartsWith(client.ReadToEnd(), "HTTP/1.1 400 ")) << head;
    EXPECT_TRUE(client.closed());
  }
  // Plain chunked is served.
  RawClient chunked(port());
  chunked.Send(
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\n");
  EXPECT_TRUE(StartsWith(chunked.ReadToEnd(), "HTTP/1.1 200 OK\r\n"));
  EXPECT_EQ(Seen(), std::vector<std::string>{"POST /x hello"});
}

// RFC 9112 5.2: obs-fold. Beast unfolds a folded value, so "Transfer-Encoding:\r\n chunked"
// would read as chunked where a peer that does not unfold sees no Transfer-Encoding (and the
// same for Content-Length): a desync. Any folded field is refused (400) and the connection closed;
// the request after it (smuggled, to a peer that read the body differently) never runs.
TEST_F(ConformanceTest, FoldedHeaderFieldIs400AndCloses) {
  Start();
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n";
  for (const std::string folded :
       {"Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
        "Transfer-Encoding:\r\n\tchunked\r\n\r\n0\r\n\r\n", "Content-Length:\r\n 5\r\n\r\nhello",
        "Content-Length:\r\n\t 5\r\n\r\nhello",
        "X-Note: one\r\n two\r\nContent-Length: 5\r\n\r\nhello"}) {
    RawClient client(port());
    ASSERT_TRUE(client.connected());
    client.Send("POST /x HTTP/1.1\r\nHost: a\r\n" + folded + smuggled);
    const std::string answer = client.ReadToEnd();
    EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 400 Bad Request\r\n")) << folded << "\n" << answer;
    EXPECT_NE(answer.find("obs-fold"), std::string::npos) << answer;
    EXPECT_NE(answer.find("Connection: close\r\n"), std::string::npos) << answer;
    EXPECT_EQ(Answers(answer), 1U) << answer;
    EXPECT_TRUE(client.closed()) << folded;
  }
  EXPECT_TRUE(Seen().empty()) << ::testing::PrintToString(Seen());
  // The same fields unfolded are served: two requests on one connection.
  RawClient plain(port());
  plain.Send(
      "POST /x HTTP/1.1\r\nHost: a\r\nX-Note: one two\r\nContent-Length: 5\r\n\r\nhello"
      "POST /y HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \tchunked\r\nConnection: close\r\n\r\n"
      "0\r\n\r\n");
  EXPECT_EQ(Count(plain.ReadToEnd(), "HTTP/1.1 200 OK\r\n"), 2U);
  EXPECT_EQ(Seen(), (std::vector<std::string>{"POST /x hello", "POST /y "}));
}

TEST_F(ConformanceTest, HeadAnswersCarryNoBody) {
  Start();
  RawClient client(port());
  client.Send(
      "HEAD /post-only HTTP/1.1\r\nHost: a\r\n\r\n"
      "HEAD /x HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const std::string answer = client.ReadToEnd();
  ASSERT_TRUE(client.closed());
  // Three answers back to back: two header blocks without a body, then the GET's with its body.
  const std::size_t first_end = answer.find("\r\n\r\n");
  ASSERT_NE(first_end, std::string::npos) << answer;
  const std::string first = answer.substr(0, first_end + 4);
  EXPECT_TRUE(StartsWith(first, "HTTP/1.1 405 Method Not Allowed\r\n")) << first;
  EXPECT_NE(first.find("Allow: POST\r\n"), std::string::npos) << first;
  EXPECT_EQ(first.find("Content-Length: 0\r\n"), std::string::npos) << first;
  const std::string rest = answer.substr(first.size());
  ASSERT_TRUE(StartsWith(rest, "HTTP/1.1 200 OK\r\n")) << answer;
  const std::size_t second_end = rest.find("\r\n\r\n");
  const std::string second = rest.substr(0, second_end + 4);
  EXPECT_NE(second.find("Content-Length: 11\r\n"), std::string::npos) << second;
  const std::string third = rest.substr(second.size());
  EXPECT_TRUE(StartsWith(third, "HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_EQ(third.substr(third.size() - 11), R"({"ok":true})");
  EXPECT_EQ(Count(answer, R"({"ok":true})"), 1U) << answer;
  EXPECT_EQ(Count(answer, "METHOD_NOT_ALLOWED"), 0U) << answer;
}

TEST_F(ConformanceTest, IdleClientGets408AndALogLine) {
  Start({.client_timeout = 200ms});
  {
    RawClient idle(port());
    const std::string answer = idle.ReadToEnd();  // sends nothing at all
    EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 408 Request Timeout\r\n")) << answer;
    EXPECT_NE(answer.find("REQUEST_TIMEOUT"), std::string::npos);
    EXPECT_TRUE(idle.closed());
  }
  {
    RawClient slow(port());
    slow.Send("GET /x HTTP/1.1\r\nHost: a\r\n");  // never finishes its headers
    EXPECT_TRUE(StartsWith(slow.ReadToEnd(), "HTTP/1.1 408 "));
    EXPECT_TRUE(slow.closed());
  }
  const std::vector<AccessRecord> records = WaitForRecords(2);
  ASSERT_EQ(records.size(), 2U);
  for (const AccessRecord& record : records) {
    EXPECT_EQ(record.http_status, 408U);
    EXPECT_EQ(record.status, "REQUEST_TIMEOUT");
    EXPECT_EQ(record.client, "127.0.0.1");
    EXPECT_FALSE(record.note.empty());
  }
  // A keep-alive connection idle after an answer gets its 408 too, but is an ordinary close:
  // only the request it served is logged.
  RawClient kept(port());
  kept.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  const std::string answer = kept.ReadToEnd();
  EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_NE(answer.find("HTTP/1.1 408 "), std::string::npos) << answer;
  const std::vector<AccessRecord> after = WaitForRecords(3);
  std::this_thread::sleep_for(50ms);  // (a fourth line would come right after the 408)
  ASSERT_EQ(Records().size(), 3U);
  EXPECT_EQ(after[2].http_status, 200U);
}

// A client that pipelines requests for big answers and never reads: the write waits for the
// write timeout, the connection is cut off, and the request's log line says why.
TEST_F(ConformanceTest, ClientThatNeverReadsIsCutOffWithALogNote) {
  Start({.write_timeout = 200ms});
  RawClient client(port(), 5s, 4096);
  ASSERT_TRUE(client.connected());
  std::string requests;
  for (int i = 0; i < 64; ++i) {  // 64 MiB of answers: far more than any socket buffers
    requests += "GET /big HTTP/1.1\r\nHost: a\r\n\r\n";
  }
  client.Send(requests);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::string note;
  while (note.empty() && std::chrono::steady_clock::now() < deadline) {
    for (const AccessRecord& record : Records()) {
      if (!record.note.empty()) {
        note = record.note;
      }
    }
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(note, "the client took no answer within the write timeout");
  EXPECT_LT(Seen().size(), 64U);  // cut off: the rest of the requests were never handled
}

// An answer is written directly as far as the socket takes it, the rest asynchronously: through
// a small receive buffer, pipelined big answers still arrive whole and in order, and the answer
// after them too.
TEST_F(ConformanceTest, BigAnswersArriveWholeAndInOrderThroughASmallReceiveBuffer) {
  Start();
  RawClient client(port(), 5s, 4096);
  ASSERT_TRUE(client.connected());
  client.Send(
      "GET /big HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /big HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const std::string answers = client.ReadToEnd();
  const std::string big_body(std::size_t{1} << 20, 'x');
  std::size_t at = 0;
  for (int i = 0; i < 2; ++i) {
    const std::size_t head_end = answers.find("\r\n\r\n", at);
    ASSERT_NE(head_end, std::string::npos) << i;
    const std::string head = answers.substr(at, head_end - at);
    EXPECT_TRUE(StartsWith(head, "HTTP/1.1 200 OK\r\n")) << head;
    EXPECT_NE(head.find("Content-Length: 1048576"), std::string::npos) << head;
    ASSERT_GE(answers.size(), head_end + 4 + big_body.size()) << i;
    EXPECT_EQ(answers.compare(head_end + 4, big_body.size(), big_body), 0) << i;
    at = head_end + 4 + big_body.size();
  }
  const std::string last = answers.substr(at);
  EXPECT_TRUE(StartsWith(last, "HTTP/1.1 200 OK\r\n")) << last.substr(0, 200);
  EXPECT_TRUE(last.ends_with(R"({"ok":true})")) << last.substr(0, 200);
}

TEST_F(ConformanceTest, LoggedMethodIsBounded) {
  Start();
  RawClient client(port());
  const std::string method(4000, 'A');
  client.Send(method + " /post-only HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(StartsWith(client.ReadToEnd(), "HTTP/1.1 405 "));
  const std::vector<AccessRecord> records = WaitForRecords(1);
  ASSERT_EQ(records.size(), 1U);
  EXPECT_LE(records[0].method.size(), 35U);
  EXPECT_EQ(records[0].method, std::string(32, 'A') + "...");
  for (fusebox::gateway::LogFormat format :
       {fusebox::gateway::LogFormat::kText, fusebox::gateway::LogFormat::kJson}) {
    // Whatever fills a record, the formatted line stays short.
    AccessRecord huge = records[0];
    huge.method = method;
    huge.target = "/" + std::string(8000, 'x');
    huge.vin = std::string(5000, 'V');
    huge.detail = std::string(5000, 'd');
    huge.request_id = std::string(5000, 'i');
    const std::string line =
        fusebox::gateway::FormatAccessRecord(huge, format, fusebox::gateway::WallTime{});
    EXPECT_LT(line.size(), 1500U) << line;
  }
}

TEST_F(ConformanceTest, ExpectContinueIsAnswered) {
  Start();
  RawClient client(port(), 2s);
  client.Send(
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n"
      "Connection: close\r\n\r\n");
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_EQ(client.ReadUntil("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s);  // not curl's 1 s fallback
  client.Send("hello");
  EXPECT_TRUE(StartsWith(client.ReadToEnd(), "HTTP/1.1 200 OK\r\n"));
  EXPECT_EQ(Seen(), std::vector<std::string>{"POST /x hello"});
  // A body over the limit is refused at once (413), without 100 Continue.
  RawClient big(port(), 2s);
  big.Send(
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_TRUE(StartsWith(big.ReadToEnd(), "HTTP/1.1 413 "));
}

TEST_F(ConformanceTest, MissingOrDuplicateHostIs400) {
  Start();
  for (const std::string request : {"GET /x HTTP/1.1\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n",
                                    "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                                    "GET /x HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"}) {
    RawClient client(port());
    client.Send(request);
    const std::string answer = client.ReadToEnd();
    EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 400 Bad Request\r\n")) << request << answer;
    EXPECT_EQ(Answers(answer), 1U) << answer;
    EXPECT_TRUE(client.closed());
  }
  EXPECT_TRUE(Seen().empty());
  // HTTP/1.0 needs no Host.
  RawClient old(port());
  old.Send("GET /x HTTP/1.0\r\n\r\n");
  EXPECT_TRUE(StartsWith(old.ReadToEnd(), "HTTP/1.0 200 OK\r\n"));
}

TEST_F(ConformanceTest, Http12IsServedAs11) {
  Start();
  for (const std::string version : {"HTTP/1.2", "HTTP/1.9"}) {
    RawClient client(port());
    client.Send("GET /x " + version + "\r\nHost: a\r\nConnection: close\r\n\r\n");
    const std::string answer = client.ReadToEnd();
    EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 200 OK\r\n")) << version << "\n" << answer;
  }
  // Keep-alive as HTTP/1.1: a second request on the same connection.
  RawClient twice(port());
  twice.Send(
      "GET /x HTTP/1.2\r\nHost: a\r\n\r\nGET /y HTTP/1.2\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(Count(twice.ReadToEnd(), "HTTP/1.1 200 OK\r\n"), 2U);
  // Another major version is still not HTTP/1.
  RawClient two(port());
  two.Send("GET /x HTTP/2.0\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(StartsWith(two.ReadToEnd(), "HTTP/1.1 400 "));
}

// Answers made without a coroutine: written (a shared body, HEAD without it) and logged once
// each; a handler that throws before awaiting anything is a 500, logged once.
TEST_F(ConformanceTest, AnswersMadeAtOnceAreWrittenAndLoggedOnce) {
  Start();
  RawClient client(port());
  client.Send(
      "GET /at-once HTTP/1.1\r\nHost: a\r\n\r\n"
      "HEAD /at-once HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /at-once-throw HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const std::string answers = client.ReadToEnd();
  ASSERT_EQ(Answers(answers), 3U) << answers;
  std::vector<std::string> parts;  // the answers (no body here holds "HTTP/1.1 ")
  for (std::size_t at = 0; at < answers.size();) {
    const std::size_t next = answers.find("HTTP/1.1 ", at + 1);
    parts.push_back(answers.substr(at, next == std::string::npos ? next : next - at));
    at = next == std::string::npos ? answers.size() : next;
  }
  ASSERT_EQ(parts.size(), 3U) << answers;
  EXPECT_TRUE(StartsWith(parts[0], "HTTP/1.1 200 OK\r\n")) << parts[0];
  EXPECT_TRUE(parts[0].ends_with("Content-Length: 11\r\n\r\n{\"ok\":true}")) << parts[0];
  EXPECT_TRUE(parts[1].ends_with("Content-Length: 11\r\n\r\n")) << parts[1];  // no body
  EXPECT_TRUE(StartsWith(parts[2], "HTTP/1.1 500 Internal Server Error\r\n")) << parts[2];
  const std::vector<AccessRecord> records = WaitForRecords(3);
  ASSERT_EQ(records.size(), 3U);
  EXPECT_EQ(records[0].status, "OK");
  EXPECT_EQ(records[1].method, "HEAD");
  EXPECT_EQ(records[2].http_status, 500U);
  EXPECT_EQ(records[2].status, "INTERNAL_ERROR");
}

// An answer made at once that the client does not take: the session waits on the write, so a
// shutdown's LogUnfinishedRequests logs it as cut off, whether it ran before the session began to
// wait or after, and the write's end (the write timeout here) logs nothing more.
TEST_F(ConformanceTest, AnAnswerMadeAtOnceThatIsNotTakenIsLoggedOnceWhenCutOff) {
  Start({.write_timeout = 300ms});
  RawClient client(port(), 5s, 4096);
  ASSERT_TRUE(client.connected());
  client.Send("GET /at-once-huge HTTP/1.1\r\nHost: a\r\n\r\n");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (Seen().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(Seen().size(), 1U);  // being answered: no longer idle, so shutdown does not close it
  server_->BeginShutdown();
  server_->LogUnfinishedRequests();
  while (server_->active_connections() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(server_->active_connections(), 0);
  const std::vector<AccessRecord> records = Records();
  ASSERT_EQ(records.size(), 1U);
  EXPECT_EQ(records[0].status, "SHUTTING_DOWN");
  EXPECT_EQ(records[0].target, "/at-once-huge");
}

TEST_F(ConformanceTest, RequestCutOffAtTheEndOfTheGraceIsLogged) {
  Start();
  RawClient client(port());
  client.Send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!slow_entered_ && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(slow_entered_);
  server_->BeginShutdown();
  EXPECT_EQ(server_->LogUnfinishedRequests(), 1U);
  EXPECT_EQ(server_->LogUnfinishedRequests(), 0U);  // once
  const std::vector<AccessRecord> records = Records();
  ASSERT_EQ(records.size(), 1U);
  EXPECT_EQ(records[0].http_status, 0U);
  EXPECT_EQ(records[0].status, "SHUTTING_DOWN");
  EXPECT_EQ(records[0].method, "GET");
  EXPECT_EQ(records[0].target, "/slow");
  EXPECT_FALSE(records[0].note.empty());
}

// The real Router behind the server, with a fake upstream that answers like vPIC and the admin
// token (FUSEBOX_ADMIN_TOKEN in the gateway) "t0ken": what the router makes of request lines and
// headers exactly as a client writes them.
class RoutedConformanceTest : public ::testing::Test {
 protected:
  static constexpr const char* kVin = "1FTMW1T88MFA00001";

  void SetUp() override {
    (void)registry_.Configure("vpic", fusebox::CircuitBreakerConfig{});
    breaker_ = registry_.Get("vpic").value();
    service_ = std::make_unique<fusebox::gateway::DecodeService>(
        fusebox::gateway::DecodeServiceDeps{*cache_, client_, *breaker_, *limits_, limiter_, clock_,
                                            wall_, metrics_},
        fusebox::gateway::DecodeServiceOptions{});
    router_ = std::make_unique<fusebox::gateway::Router>(
        fusebox::gateway::RouterDeps{*service_, registry_, *cache_, *limits_, metrics_, limiter_,
                                     client_, std::string("t0ken"), admin_throttle_, nullptr});
    auto created = fusebox::gateway::HttpServer::Create(
        io_, {.host = "127.0.0.1", .port = 0},
        [this](HttpRequest request) { return router_->Handle(std::move(request)); }, nullptr);
    ASSERT_TRUE(created) << created.error();
    server_ = std::move(*created);
    server_->Start();
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    if (!server_) {
      return;
    }
    server_->BeginShutdown();
    guard_.reset();
    thread_.join();
  }

  // One request on its own connection (closed after the answer); the whole answer.
  std::string Exchange(const std::string& request_line, const std::string& fields = "") {
    RawClient client(server_->port());
    EXPECT_TRUE(client.connected());
    client.Send(request_line + "\r\nHost: gateway.example\r\n" + fields +
                "Connection: close\r\n\r\n");
    return client.ReadToEnd();
  }

  fusebox::testing::ManualClock clock_;
  fusebox::gateway::testing::ManualWallClock wall_;
  fusebox::gateway::testing::FakeVpicClient client_;
  fusebox::Registry registry_{fusebox::CircuitBreakerConfig{}, {.clock = &clock_}};
  std::shared_ptr<fusebox::CircuitBreaker> breaker_;
  std::unique_ptr<fusebox::gateway::UpstreamLimits> limits_ =
      fusebox::gateway::UpstreamLimits::Fixed(4);
  std::unique_ptr<fusebox::gateway::Cache> cache_ = fusebox::gateway::MakeMemoryCache(100);
  fusebox::gateway::RateLimiter limiter_{0, 1, clock_};
  fusebox::gateway::GatewayMetrics metrics_;
  fusebox::gateway::AdminThrottle admin_throttle_{clock_};
  std::unique_ptr<fusebox::gateway::DecodeService> service_;
  std::unique_ptr<fusebox::gateway::Router> router_;
  net::io_context io_{1};
  net::executor_work_guard<net::io_context::executor_type> guard_ = net::make_work_guard(io_);
  std::unique_ptr<fusebox::gateway::HttpServer> server_;
  std::thread thread_;
};

// RFC 9112 3.2.2: a server must accept the absolute form (what a client configured to use a proxy
// sends). It is answered as the origin form of its path and query; the authority form and the
// asterisk form, which no route takes, and a malformed absolute URI stay 400.
TEST_F(RoutedConformanceTest, AbsoluteFormTargetIsAnsweredLikeTheOriginForm) {
  const std::string origin =
      Exchange(fmt::format("GET /api/v1/vin/{}?modelyear=2021 HTTP/1.1", kVin));
  EXPECT_TRUE(StartsWith(origin, "HTTP/1.1 200 OK\r\n")) << origin;
  const std::string absolute = Exchange(
      fmt::format("GET http://gateway.example:8080/api/v1/vin/{}?modelyear=2021 HTTP/1.1", kVin));
  EXPECT_TRUE(StartsWith(absolute, "HTTP/1.1 200 OK\r\n")) << absolute;
  EXPECT_NE(absolute.find(fmt::format(R"("vin":"{}")", kVin)), std::string::npos) << absolute;
  EXPECT_NE(absolute.find(R"("modelyear":2021)"), std::string::npos) << absolute;
  EXPECT_TRUE(
      StartsWith(Exchange("GET https://other.example/healthz HTTP/1.1"), "HTTP/1.1 200 OK\r\n"));
  for (const std::string line :
       {"GET gateway.example:443 HTTP/1.1", "GET * HTTP/1.1", "GET http://[::1/healthz HTTP/1.1",
        "GET http:///healthz HTTP/1.1"}) {
    const std::string answer = Exchange(line);
    EXPECT_TRUE(StartsWith(answer, "HTTP/1.1 400 Bad Request\r\n")) << line << "\n" << answer;
    EXPECT_NE(answer.find("The request target is not a valid URL path."), std::string::npos)
        << answer;
  }
}

// RFC 9110 11.1: the auth scheme is case-insensitive ("bearer" is "Bearer"); 11.4: one or more
// spaces before the token.
TEST_F(RoutedConformanceTest, AdminBearerSchemeInLowercaseIsAccepted) {
  const std::string open = Exchange("POST /admin/breakers/vpic/force-open HTTP/1.1",
                                    "Authorization: bearer t0ken\r\nContent-Length: 0\r\n");
  EXPECT_TRUE(StartsWith(open, "HTTP/1.1 200 OK\r\n")) << open;
  EXPECT_EQ(breaker_->state(), fusebox::State::kForcedOpen);
  const std::string reset = Exchange("POST /admin/breakers/vpic/reset HTTP/1.1",
                                     "Authorization: BEARER   t0ken\r\nContent-Length: 0\r\n");
  EXPECT_TRUE(StartsWith(reset, "HTTP/1.1 200 OK\r\n")) << reset;
  EXPECT_EQ(breaker_->state(), fusebox::State::kClosed);
  const std::string wrong = Exchange("POST /admin/breakers/vpic/force-open HTTP/1.1",
                                     "Authorization: bearer t0ken2\r\nContent-Length: 0\r\n");
  EXPECT_TRUE(StartsWith(wrong, "HTTP/1.1 401 Unauthorized\r\n")) << wrong;
  EXPECT_EQ(breaker_->state(), fusebox::State::kClosed);
}

}  // namespace
