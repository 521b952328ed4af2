// vin-gateway/service/http_vpic_client.h
//
// The production VpicClient: HTTP/1.1 over TCP or TLS (Boost.Beast), with a keep-alive pool.
//
//   take an idle pooled connection (closed ones are dropped before the request is written)
//     or connect: resolve, TCP connect, TLS handshake (SNI, certificate and host name verified)
//   write the request (a pooled connection found broken on write is replaced once)
//   read the answer: interim (1xx) answers set aside, then the final one's head and a body of
//     at most 1 MiB (upstream_answer.h)
//   the exchange ended cleanly (the final answer read whole, keep-alive, nothing after it): the
//     connection goes back to the pool; otherwise it is closed
//
// A call that is cancelled (the budget ran out in fusebox::asio::Run) aborts its pending socket
// operation at once and its connection is closed, never reused. Certificate verification is
// always on for https (system CAs, or `ca_file`).
//
// Thread safety: calls may run concurrently from coroutines on any executors (of any
// io_context); the pool is guarded by a mutex, and a pooled connection, whose socket belongs to
// the client's executor, is used by one call at a time. Time: none of its own (the budget is the
// caller's).
//
// Example:
//   auto client = MakeHttpVpicClient(io.get_executor(), {.base_url =
//   "https://vpic.nhtsa.dot.gov"}); if (!client) die(client.error()); UpstreamReply reply =
//   co_await (*client)->DecodeVin("1FTMW1T88MFA00001", 0);
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "fusebox/status.h"
#include "service/vpic_client.h"

namespace fusebox::gateway {

struct HttpVpicClientOptions {
  // http:// or https:// with a host, optional port and path prefix (no query).
  std::string base_url = "https://vpic.nhtsa.dot.gov";
  // PEM file of trusted CAs; "" uses the system's.
  std::string ca_file;
  // Idle connections kept for reuse. Default 16.
  std::size_t max_idle = 16;
  // Upstream bodies larger than this are a failure. Default 1 MiB.
  std::size_t body_limit = 1 << 20;
  std::string user_agent = "vin-gateway/0.1 (+fusebox)";
};

// Fails (with a sentence) when the URL is unusable or the TLS setup (CA file) fails.
fusebox::Result<std::unique_ptr<VpicClient>, std::string> MakeHttpVpicClient(
    boost::asio::any_io_executor executor, HttpVpicClientOptions options);

}  // namespace fusebox::gateway
