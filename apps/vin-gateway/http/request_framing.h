// vin-gateway/http/request_framing.h
//
// The steps of reading one request that do not touch a socket, shared by the server's connection
// loop (http_server.cc) and the HTTP request fuzzer, so that what is fuzzed is what serves:
//   - DowngradeMinorVersion: HTTP/1.2..1.9 rewritten to HTTP/1.1 in the read buffer;
//   - FramingRefusal: the 400 for unsafe framing (RFC 9112 3.2, 6.1) once the header is read;
//   - ExpectsContinue: whether `100 Continue` is owed before the body is read;
//   - ReadFailureResponse: the answer to a read that failed (431, 413, 408, 400; or none);
//   - ToHttpRequest: the parsed request as the router sees it;
//   - AppendResponseHead: an answer's status line and header fields as they go on the wire
//     before its body (the server sends the two in one gather write).
// Pure functions of their arguments, no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include "http/http_message.h"

namespace vin_gateway {

// When the request line in `buffer` says HTTP/1.x with x in 2..9, x becomes 1 in place (same
// length) and the answer is true: Beast parses only HTTP/1.0 and 1.1, and RFC 9110 2.5 asks a
// server to serve a later HTTP/1.x as the highest 1.x it knows.
bool DowngradeMinorVersion(boost::beast::flat_buffer& buffer);

// The refusal of a request whose header was read but whose framing or Host is unsafe: a
// Transfer-Encoding other than exactly `chunked`, any Transfer-Encoding in HTTP/1.0, an HTTP/1.1
// request without exactly one Host, or any request with two. The connection closes after it.
std::optional<HttpResponse> FramingRefusal(
    const boost::beast::http::request_parser<boost::beast::http::string_body>& parser);

// Whether the client waits for `100 Continue` before sending its body (HTTP/1.1 and
// `Expect: 100-continue`).
bool ExpectsContinue(const boost::beast::http::request_header<>& header);

// The answer to a request that could not be read: 431 past the header limit, 413 past the body
// limit, 408 at the client timeout (`boost::beast::error::timeout`), 400 for anything else the
// parser refused; nullopt when the client left (or the server is draining): just close.
std::optional<HttpResponse> ReadFailureResponse(const boost::system::error_code& ec);

// The router's view of a parsed request from `client` (its address, for logs and rate limits).
HttpRequest ToHttpRequest(boost::beast::http::request<boost::beast::http::string_body>&& request,
                          std::string client);

// Appends `response`'s head as the server writes it before the body: the status line
// "HTTP/1.`version % 10` CODE REASON", then Server, Content-Type, Cache-Control no-store,
// X-Request-Id, the response's own headers (one of the same name, case-insensitive, replaces the
// earlier field and goes last), Connection (close for HTTP/1.1 without keep-alive, keep-alive for
// HTTP/1.0 with it) and Content-Length, each "Name: value\r\n",
// then "\r\n". Byte for byte what Beast's serializer writes for the same message (a test holds
// the two together), without building Beast's field list first.
void AppendResponseHead(const HttpResponse& response, unsigned version, std::string_view request_id,
                        bool keep_alive, std::string& out);

}  // namespace vin_gateway
