// ReadUpstreamAnswer (service/upstream_answer.h) on an in-memory stream: interim (1xx) answers set
// aside, the final one returned, and a connection reusable only after a clean exchange.
#include "service/upstream_answer.h"

#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>

namespace fusebox::gateway {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;

constexpr std::string_view kOk = "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{\"VIN\":\"ONE\"}";

struct Read {
  UpstreamAnswer got;
  std::size_t left = 0;  // bytes read past the answer
};

// Reads one answer from `bytes` (the upstream then closes, unless `keep_open`).
Read ReadFrom(std::string_view bytes, bool keep_open = false) {
  net::io_context io;
  beast::test::stream stream(io);
  beast::test::stream remote(io);
  stream.connect(remote);
  remote.write_some(net::buffer(bytes.data(), bytes.size()));
  if (!keep_open) {
    remote.close();
  }
  std::optional<Read> read;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        beast::flat_buffer buffer;
        Read r;
        r.got = co_await ReadUpstreamAnswer(stream, buffer, 1 << 20);
        r.left = buffer.size();
        read = std::move(r);
      },
      [](const std::exception_ptr& e) {
        if (e) {
          std::rethrow_exception(e);
        }
      });
  io.run();
  EXPECT_TRUE(read.has_value()) << "the read did not finish";
  return read.value_or(Read{});
}

TEST(UpstreamAnswerTest, FinalAnswerAloneIsReadAndReusable) {
  const Read r = ReadFrom(kOk, /*keep_open=*/true);
  ASSERT_FALSE(r.got.error) << r.got.error.message();
  EXPECT_EQ(r.got.response.result_int(), 200U);
  EXPECT_EQ(r.got.response.body(), "{\"VIN\":\"ONE\"}");
  EXPECT_EQ(r.got.interim, 0U);
  EXPECT_TRUE(r.got.reusable);
}

TEST(UpstreamAnswerTest, EarlyHintsBeforeTheAnswerIsSetAside) {
  const Read r =
      ReadFrom(std::string("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n") +
                   std::string(kOk),
               true);
  ASSERT_FALSE(r.got.error) << r.got.error.message();
  EXPECT_EQ(r.got.response.result_int(), 200U);
  EXPECT_EQ(r.got.response.body(), "{\"VIN\":\"ONE\"}");
  EXPECT_EQ(r.got.interim, 1U);
  EXPECT_TRUE(r.got.reusable);
}

TEST(UpstreamAnswerTest, SeveralInterimAnswersOfEveryKindAreSetAside) {
  const Read r = ReadFrom(std::string("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
                                      "HTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 199 Misc\r\n\r\n") +
                              std::string(kOk),
                          true);
  ASSERT_FALSE(r.got.error) << r.got.error.message();
  EXPECT_EQ(r.got.response.result_int(), 200U);
  EXPECT_EQ(r.got.interim, 4U);
  EXPECT_TRUE(r.got.reusable);
}

TEST(UpstreamAnswerTest, InterimAnswerWithAContentLengthHasNoBody) {
  // A 1xx never has a body, whatever its head says: the bytes after it are the next answer.
  const Read r = ReadFrom(
      "HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\nHTTP/1.1 503 Busy\r\n"
      "Content-Length: 0\r\n\r\n",
      true);
  ASSERT_FALSE(r.got.error) << r.got.error.message();
  EXPECT_EQ(r.got.response.result_int(), 503U);
  EXPECT_EQ(r.got.interim, 1U);
}

TEST(UpstreamAnswerTest, InterimAnswerThenCloseIsAnErrorNotAnAnswer) {
  const Read r = ReadFrom("HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_TRUE(r.got.error);
  EXPECT_EQ(r.got.interim, 1U);
  EXPECT_FALSE(r.got.reusable);
}

TEST(UpstreamAnswerTest, SwitchingProtocolsNeverAskedForIsAProtocolFailure) {
  const Read r = ReadFrom(std::string("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                      "Connection: Upgrade\r\n\r\n") +
                              std::string(kOk),
                          true);
  EXPECT_EQ(r.got.error, boost::beast::http::error::bad_status);
  EXPECT_TRUE(r.got.upgrade);
  EXPECT_FALSE(r.got.reusable);
}

TEST(UpstreamAnswerTest, MoreInterimAnswersThanTheCapIsAProtocolFailure) {
  std::string bytes;
  for (unsigned i = 0; i <= kMaxInterimAnswers; ++i) {
    bytes += "HTTP/1.1 100 Continue\r\n\r\n";
  }
  const Read at_cap = ReadFrom(bytes.substr(0, bytes.size() - 25) + std::string(kOk), true);
  ASSERT_FALSE(at_cap.got.error) << at_cap.got.error.message();
  EXPECT_EQ(at_cap.got.interim, kMaxInterimAnswers);
  const Read over = ReadFrom(bytes + std::string(kOk), true);
  EXPECT_EQ(over.got.error, boost::beast::http::error::bad_status);
  EXPECT_FALSE(over.got.upgrade);
  EXPECT_FALSE(over.got.reusable);
}

TEST(UpstreamAnswerTest, BytesAfterTheAnswerMakeTheConnectionUnfitForReuse) {
  // A second answer nobody asked for is already on the wire: the next request would read it.
  const Read r = ReadFrom(std::string(kOk) + std::string(kOk), true);
  ASSERT_FALSE(r.got.error) << r.got.error.message();
  EXPECT_EQ(r.got.response.result_int(), 200U);
  EXPECT_GT(r.left, 0U);
  EXPECT_FALSE(r.got.reusable);
}

TEST(UpstreamAnswerTest, ConnectionCloseAnswerIsNotReusable) {
  const Read r =
      ReadFrom("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", true);
  ASSERT_FALSE(r.got.error) << r.got.error.message();
  EXPECT_FALSE(r.got.reusable);
}

TEST(UpstreamAnswerTest, AnswerEndedByTheConnectionClosingIsNotReusable) {
  // No length and not chunked: the body ends where the upstream closed. The message itself says
  // nothing against keep-alive (HTTP/1.1, no Connection: close); only the parser knows.
  const Read r = ReadFrom("HTTP/1.1 200 OK\r\n\r\n{\"VIN\":\"ONE\"}");
  ASSERT_FALSE(r.got.error) << r.got.error.message();
  EXPECT_EQ(r.got.response.body(), "{\"VIN\":\"ONE\"}");
  EXPECT_TRUE(r.got.response.keep_alive());
  EXPECT_FALSE(r.got.reusable);
}

TEST(UpstreamAnswerTest, BodyOverTheCapIsAnError) {
  net::io_context io;
  beast::test::stream stream(io);
  stream.append("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'x'));
  std::optional<UpstreamAnswer> got;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        beast::flat_buffer buffer;
        got = co_await ReadUpstreamAnswer(stream, buffer, 10);
      },
      [](const std::exception_ptr&) {});
  io.run();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->error, boost::beast::http::error::body_limit);
  EXPECT_FALSE(got->reusable);
}

}  // namespace
}  // namespace fusebox::gateway
