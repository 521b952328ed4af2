// vin-gateway/service/upstream_answer.h
//
// Reading the upstream's answer to one request off a connection, for the HTTP vPIC client
// (http_vpic_client.h), and whether the connection may carry another request afterwards.
//
// An HTTP/1.1 server may send any number of informational (1xx) answers before the final one,
// whether the client asked for them or not (RFC 9110 section 15.2): `100 Continue`, `103 Early
// Hints` from a CDN, `102 Processing`. Each is read and set aside; the first answer with a
// status of 200 or more (or below 100, which is no HTTP status and fails as the final answer) is
// the answer. Taking an interim answer as the final one would both fail the call and leave the
// real answer on the wire, where the next request on a pooled connection would read it as its
// own: a decode of one VIN or model year answered with another's.
//
//   101 Switching Protocols  never asked for (the client sends no Upgrade): a protocol failure
//   more than kMaxInterimAnswers interim answers: a protocol failure (the budget bounds the time;
//                            this bounds the work)
//
// `reusable` is true only when the exchange ended cleanly: the final answer was read whole, it
// keeps the connection alive, and nothing more arrived after it. Any other connection must be
// closed, never pooled.
//
// Thread safety: one call per stream at a time. Time: none of its own (the caller's budget
// cancels the read).
//
// Example:
//   beast::flat_buffer buffer;
//   UpstreamAnswer got = co_await ReadUpstreamAnswer(stream, buffer, 1 << 20);
//   if (got.error) fail(got.error);           // transport, parse, 101 or too many interim
//   else use(got.response), pool it only if got.reusable;
#pragma once

#include <cstddef>
#include <cstdint>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

namespace fusebox::gateway {

// Interim answers read before one final answer at most; one more is a protocol failure.
inline constexpr unsigned kMaxInterimAnswers = 16;
// Head of any one answer (interim or final), in bytes.
inline constexpr std::size_t kMaxUpstreamHeadBytes = std::size_t{64} * 1024;

// NOLINTNEXTLINE(bugprone-exception-escape): Beast's response has a throwing move assignment
struct UpstreamAnswer {
  // Empty when `response` holds the final answer. A Beast HTTP error (bad_version's category)
  // for a 101, too many interim answers or an answer that is not HTTP; else the transport's.
  boost::system::error_code error;
  boost::beast::http::response<boost::beast::http::string_body> response;
  unsigned interim = 0;   // interim (1xx) answers set aside before the final one
  bool upgrade = false;   // the error is an unasked-for 101
  bool reusable = false;  // the connection may carry another request
};

template <typename Stream>
boost::asio::awaitable<UpstreamAnswer> ReadUpstreamAnswer(Stream& stream,
                                                          boost::beast::flat_buffer& buffer,
                                                          std::size_t body_limit) {
  namespace http = boost::beast::http;
  UpstreamAnswer got;
  for (;;) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(body_limit);
    parser.header_limit(static_cast<std::uint32_t>(kMaxUpstreamHeadBytes));
    auto [ec, n] = co_await http::async_read(stream, buffer, parser,
                                             boost::asio::as_tuple(boost::asio::use_awaitable));
    (void)n;
    if (ec) {
      got.error = ec;
      co_return got;
    }
    const unsigned status = parser.get().result_int();
    if (status == 101) {
      got.upgrade = true;
      got.error = http::error::bad_status;
      co_return got;
    }
    if (status < 100 || status >= 200) {
      // The parser's keep_alive, not the message's: it is also false when the body was ended
      // by the connection closing (no length, not chunked).
      got.reusable = parser.keep_alive();
      got.response = parser.release();
      break;
    }
    // An interim answer has no body (Beast's parser is done after its head); what follows on
    // the wire is the next answer to this same request.
    if (++got.interim > kMaxInterimAnswers) {
      got.error = http::error::bad_status;
      co_return got;
    }
  }
  got.reusable = got.reusable && buffer.size() == 0;
  co_return got;
}

}  // namespace fusebox::gateway
