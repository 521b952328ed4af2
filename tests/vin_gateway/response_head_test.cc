// The answer's head as the server writes it (AppendResponseHead) against Beast's own serializer
// for the same message: byte for byte, for every kind of answer the gateway gives (JSON with and
// without keep-alive, HTTP/1.0, Retry-After, a static asset whose Cache-Control replaces the
// default, 304 without a body, an unknown status code, a shared body, a handler's header that
// replaces the server's or an earlier one of another case), and nosniff on every one of them.
#include <cctype>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "http/http_message.h"
#include "http/request_framing.h"

namespace {

namespace http = boost::beast::http;
using fusebox::gateway::HttpResponse;

// What Beast writes for the message the server used to build field by field.
std::string BeastBytes(const HttpResponse& response, unsigned version, const std::string& id,
                       bool keep_alive) {
  http::response<http::string_body> out{static_cast<http::status>(response.status), version};
  out.set(http::field::server, "vin-gateway");
  out.set(http::field::content_type, response.content_type);
  out.set(http::field::cache_control, "no-store");
  out.set("X-Content-Type-Options", "nosniff");
  out.set("X-Request-Id", id);
  for (const auto& [name, value] : response.headers) {
    out.set(name, value);
  }
  out.keep_alive(keep_alive);
  out.body() = std::string(response.body_bytes());
  out.prepare_payload();
  std::ostringstream wire;
  wire << out;
  return wire.str();
}

std::string OurBytes(const HttpResponse& response, unsigned version, const std::string& id,
                     bool keep_alive) {
  std::string bytes;
  fusebox::gateway::AppendResponseHead(response, version, id, keep_alive, bytes);
  return bytes + std::string(response.body_bytes());
}

HttpResponse Response(unsigned status, std::string body,
                      std::vector<std::pair<std::string, std::string>> headers = {}) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  response.headers = std::move(headers);
  return response;
}

TEST(ResponseHeadTest, SameBytesAsBeastForEveryKindOfAnswer) {
  HttpResponse asset = Response(
      200, "<!doctype html>",
      {{"Cache-Control", "no-cache"}, {"ETag", "\"abc\""}, {"X-Content-Type-Options", "nosniff"}});
  asset.content_type = "text/html; charset=utf-8";
  HttpResponse not_modified = Response(304, "", {{"cache-control", "no-cache"}, {"ETag", "\"a\""}});
  HttpResponse shared = Response(200, "");
  shared.shared_body = std::make_shared<const std::string>(R"({"status":"OK","vin":"1"})");
  const std::vector<HttpResponse> answers = {
      Response(200, R"({"status":"OK"})"),
      shared,
      Response(405, "{}", {{"Allow", "GET, HEAD"}, {"X-Extra", "1"}}),
      Response(200, "{}", {{"server", "other"}}),
      Response(200, "{}", {{"X-A", "1"}, {"x-a", "2"}}),
      Response(503, R"({"status":"CIRCUIT_OPEN"})", {{"Retry-After", "20"}}),
      Response(429, R"({"status":"RATE_LIMITED"})", {{"Retry-After", "1"}, {"Retry-After", "2"}}),
      Response(404, ""),
      Response(599, "{}"),
      asset,
      not_modified,
  };
  int compared = 0;
  for (const HttpResponse& answer : answers) {
    for (const unsigned version : {10U, 11U}) {
      for (const bool keep_alive : {true, false}) {
        EXPECT_EQ(OurBytes(answer, version, "req-7", keep_alive),
                  BeastBytes(answer, version, "req-7", keep_alive))
            << "status " << answer.status << ", HTTP/1." << version % 10 << ", keep-alive "
            << keep_alive;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 44);
}

// A JSON answer echoes its request (a VIN, a message); without nosniff an old browser may read
// it as a script or a page. Every answer the server writes, its own refusals included (400, 408,
// 413, 431 with their JSON bodies), says nosniff exactly once.
TEST(ResponseHeadTest, EveryAnswerIsSentWithNosniff) {
  std::vector<HttpResponse> answers = {
      Response(200, R"({"status":"OK"})"),
      Response(422, R"({"status":"VIN_INVALID","vin":"<SCRIPT>"})"),
      Response(429, R"({"status":"RATE_LIMITED"})", {{"Retry-After", "1"}}),
      Response(200, "<!doctype html>", {{"Cache-Control", "no-cache"}, {"ETag", "\"a\""}}),
      Response(200, "{}", {{"x-content-type-options", "nosniff"}}),
  };
  using boost::system::error_code;
  for (const error_code ec :
       {error_code(http::error::header_limit), error_code(http::error::body_limit),
        error_code(boost::beast::error::timeout), error_code(http::error::bad_method)}) {
    std::optional<HttpResponse> refusal = fusebox::gateway::ReadFailureResponse(ec);
    ASSERT_TRUE(refusal.has_value()) << ec.message();
    answers.push_back(std::move(*refusal));
  }
  for (const HttpResponse& answer : answers) {
    for (const unsigned version : {10U, 11U}) {
      std::string head;
      fusebox::gateway::AppendResponseHead(answer, version, "id", false, head);
      std::string lower = head;
      for (char& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      EXPECT_EQ(lower.find("\r\nx-content-type-options: nosniff\r\n"),
                lower.rfind("\r\nx-content-type-options: nosniff\r\n"))
          << head;
      EXPECT_NE(lower.find("\r\nx-content-type-options: nosniff\r\n"), std::string::npos) << head;
    }
  }
}

TEST(ResponseHeadTest, AppendsToWhatIsThere) {
  std::string out = "before|";
  fusebox::gateway::AppendResponseHead(Response(200, "x"), 11, "id", true, out);
  EXPECT_TRUE(out.starts_with("before|HTTP/1.1 200 OK\r\nServer: vin-gateway\r\n")) << out;
  EXPECT_TRUE(out.ends_with("Content-Length: 1\r\n\r\n")) << out;
}

}  // namespace
