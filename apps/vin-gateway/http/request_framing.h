// vin-gateway/http/request_framing.h
//
// The steps of reading one request that do not touch a socket, shared by the server's connection
// loop (http_server.cc) and the HTTP request fuzzer, so that what is fuzzed is what serves:
//   - DowngradeMinorVersion: HTTP/1.2..1.9 rewritten to HTTP/1.1 in the read buffer;
//   - HeaderReadBuffer: the read buffer as the header read sees it, which notes obs-fold;
//   - FramingRefusal: the 400 for unsafe framing (RFC 9112 3.2, 5.2, 6.1) once the header is
//     read;
//   - ExpectsContinue: whether `100 Continue` is owed before the body is read;
//   - ReadFailureResponse: the answer to a read that failed (431, 413, 408, 400; or none);
//   - ToHttpRequest: the parsed request as the router sees it;
//   - AppendResponseHead: an answer's status line and header fields as they go on the wire
//     before its body (the server sends the two in one gather write).
// Pure functions of their arguments, no I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include "http/http_message.h"

namespace fusebox::gateway {

// When the request line in `buffer` says HTTP/1.x with x in 2..9, x becomes 1 in place (same
// length) and the answer is true: Beast parses only HTTP/1.0 and 1.1, and RFC 9110 2.5 asks a
// server to serve a later HTTP/1.x as the highest 1.x it knows.
bool DowngradeMinorVersion(boost::beast::flat_buffer& buffer);

// Whether `header`, a request's header block as received (request line, fields, empty line),
// folds a field value onto a further line: a line break followed by SP or HTAB (obs-fold, RFC
// 9112 5.2). In a header Beast accepted, that can only be obs-fold: a line that starts with
// white space is no field of its own.
bool HasObsFold(std::string_view header);

// The connection's read buffer as http::async_read_header (and the fuzz target) use it: it passes
// everything through to `buffer` and notes whether the bytes the parser consumes fold a line
// (HasObsFold). Beast parses a header only once all of it is buffered and consumes it whole,
// after which the raw bytes are gone; it hands the parser's callers each field value already
// unfolded ("Transfer-Encoding:\r\n chunked" reads as "chunked"), so the raw header is the only
// place obs-fold shows. Meets Asio's DynamicBuffer (v1) requirements.
class HeaderReadBuffer {
 public:
  using const_buffers_type = boost::beast::flat_buffer::const_buffers_type;
  using mutable_buffers_type = boost::beast::flat_buffer::mutable_buffers_type;

  explicit HeaderReadBuffer(boost::beast::flat_buffer& buffer) : buffer_(buffer) {}

  std::size_t size() const { return buffer_.size(); }
  std::size_t max_size() const { return buffer_.max_size(); }
  std::size_t capacity() const { return buffer_.capacity(); }
  const_buffers_type data() const { return buffer_.data(); }
  mutable_buffers_type prepare(std::size_t n) { return buffer_.prepare(n); }
  void commit(std::size_t n) { buffer_.commit(n); }
  void consume(std::size_t n);

  // Whether the bytes consumed so far fold a line.
  bool obs_fold() const { return obs_fold_; }

 private:
  boost::beast::flat_buffer& buffer_;
  bool obs_fold_ = false;
};

// The refusal of a request whose header was read but whose framing or Host is unsafe: a header
// with obs-fold (`obs_fold`, from HeaderReadBuffer: any field, as RFC 9112 5.2 allows, since a
// folded Transfer-Encoding or Content-Length is the smuggler's and no client of this API folds),
// a Transfer-Encoding other than exactly `chunked`, any Transfer-Encoding in HTTP/1.0, an HTTP/1.1
// request without exactly one Host, or any request with two. The connection closes after it.
std::optional<HttpResponse> FramingRefusal(
    const boost::beast::http::request_parser<boost::beast::http::string_body>& parser,
    bool obs_fold);

// Whether the client waits for `100 Continue` before sending its body (HTTP/1.1 and
// `Expect: 100-continue`).
bool ExpectsContinue(const boost::beast::http::request_header<>& header);

// The answer to a request that could not be read: 431 past the header limit, 413 past the body
// limit, 408 at the client timeout (`boost::beast::error::timeout`), 400 for anything else the
// parser refused; nullopt when the client left (or the server is draining): just close.
std::optional<HttpResponse> ReadFailureResponse(const boost::system::error_code& ec);

// The router's view of a parsed request from `client` (its ClientKey, client_address.h: the rate
// limit's and the admin throttle's key).
HttpRequest ToHttpRequest(boost::beast::http::request<boost::beast::http::string_body>&& request,
                          std::string client);

// Appends `response`'s head as the server writes it before the body: the status line
// "HTTP/1.`version % 10` CODE REASON", then Server, Content-Type, Cache-Control no-store,
// X-Content-Type-Options nosniff (on every answer, refusals included: a browser must never read a
// JSON answer that echoes its request as a script or a page), X-Request-Id, the response's own
// headers (one of the same name, case-insensitive, replaces the earlier field and goes last),
// Connection (close for HTTP/1.1 without keep-alive, keep-alive for HTTP/1.0 with it) and
// Content-Length, each "Name: value\r\n", then "\r\n". Byte for byte what Beast's serializer
// writes for the same message (a test holds the two together), without building Beast's field
// list first.
void AppendResponseHead(const HttpResponse& response, unsigned version, std::string_view request_id,
                        bool keep_alive, std::string& out);

}  // namespace fusebox::gateway
