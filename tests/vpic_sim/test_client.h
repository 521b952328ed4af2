// tests/vpic_sim/test_client.h
//
// A small blocking HTTP client for the vpic-sim tests. Every operation runs Asio on the calling
// thread and is bounded by a deadline (Beast's tcp_stream timeout), so a test waits on I/O with
// a timeout and never sleeps.
//
// Example:
//   TestConnection c;
//   ASSERT_TRUE(c.Connect(port));
//   ASSERT_TRUE(c.Send(HttpGet("/api/vehicles/DecodeVinValues/1FTMW1T88MFA00001")));
//   auto reply = c.ReadResponse(std::chrono::seconds(5));
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/object.hpp>
#include <boost/system/error_code.hpp>

namespace fusebox::vpic_sim::test_client {

using namespace std::chrono_literals;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

// How a raw read ended.
enum class ReadEnd { kEof, kReset, kTimeout, kError };

struct RawRead {
  std::string bytes;  // everything received before the end
  ReadEnd end = ReadEnd::kError;
  boost::system::error_code ec;
};

// The request text of a GET / POST (HTTP/1.1, Host 127.0.0.1, keep-alive unless `close`).
std::string HttpGet(std::string_view target, bool close = false);
std::string HttpPost(std::string_view target, std::string_view body,
                     std::string_view content_type = "application/x-www-form-urlencoded",
                     bool close = false);

// One client connection to 127.0.0.1.
class TestConnection {
 public:
  TestConnection();
  ~TestConnection();

  bool Connect(std::uint16_t port, std::chrono::milliseconds timeout = 5s);
  bool Send(std::string_view bytes, std::chrono::milliseconds timeout = 5s);
  // One HTTP response, or nullopt (see last_error()) when it does not arrive in time or the
  // connection breaks.
  std::optional<HttpResponse> ReadResponse(std::chrono::milliseconds timeout = 5s);
  // Reads until EOF, an error or the timeout, keeping every byte.
  RawRead ReadAll(std::chrono::milliseconds timeout);
  void Close();

  const boost::system::error_code& last_error() const { return last_error_; }

 private:
  boost::asio::io_context ioc_;
  std::unique_ptr<boost::beast::tcp_stream> stream_;
  boost::beast::flat_buffer buffer_;
  boost::system::error_code last_error_;
};

// One request on a fresh connection; nullopt when it fails or times out.
std::optional<HttpResponse> Get(std::uint16_t port, std::string_view target,
                                std::chrono::milliseconds timeout = 5s);
std::optional<HttpResponse> Post(
    std::uint16_t port, std::string_view target, std::string_view body,
    std::string_view content_type = "application/x-www-form-urlencoded",
    std::chrono::milliseconds timeout = 5s);

// GET /__control/stats, parsed (an empty object when it fails).
boost::json::object Stats(std::uint16_t port);
// The integer at stats[key] or stats[key][sub] (-1 when absent).
std::int64_t StatsValue(const boost::json::object& stats, std::string_view key,
                        std::string_view sub = {});
// Polls /__control/stats until `key`(/`sub`) equals `want` or `timeout` passes; returns the last
// value seen.
std::int64_t WaitForStat(std::uint16_t port, std::string_view key, std::string_view sub,
                         std::int64_t want, std::chrono::milliseconds timeout = 5s);

// GET over TLS, verifying the server against `ca_file`; nullopt on any failure.
std::optional<HttpResponse> HttpsGet(std::uint16_t port, std::string_view target,
                                     const std::string& ca_file,
                                     std::chrono::milliseconds timeout = 5s);

// Percent-encodes everything but unreserved characters (A-Z a-z 0-9 - . _ ~).
std::string PercentEncode(std::string_view text);

// The Content-Length declared in a raw response head, or -1.
std::int64_t DeclaredContentLength(std::string_view raw);
// The body part of a raw response (after the blank line), or "".
std::string_view RawBody(std::string_view raw);

}  // namespace fusebox::vpic_sim::test_client
