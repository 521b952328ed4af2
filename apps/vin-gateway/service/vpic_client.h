// vin-gateway/service/vpic_client.h
//
// The upstream behind an interface: the decode path depends on `VpicClient`, production uses the
// HTTP(S) client (http_vpic_client.h) and unit tests use a fake. A call is one attempt that either
// produces an HTTP answer or a typed transport failure; it never throws for network trouble and
// never retries (the gateway makes exactly one upstream attempt per decode).
//
// Budgets are not the client's business: the caller runs each call inside fusebox::asio::Run,
// which cancels it (terminal cancellation) when the breaker's budget runs out. An implementation
// must therefore abort promptly on cancellation and must not reuse a connection whose call was
// cancelled.
//
// Thread safety: implementations must allow concurrent calls. Time: none of its own.
//
// Example:
//   UpstreamReply reply = co_await client.DecodeVin("1FTMW1T88MFA00001", 0);
//   if (reply.transport == UpstreamReply::Transport::kLocal) ...  // ours: the breaker ignores it
//   if (!reply.ok() || reply.status != 200) ...   // an upstream failure for the breaker
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "fusebox/clock.h"

namespace fusebox::gateway {

// The answer of one upstream attempt.
struct UpstreamReply {
  enum class Transport : std::uint8_t {
    kOk,            // an HTTP answer was read (whatever its status)
    kConnect,       // resolve or connect failed
    kTls,           // handshake or certificate verification failed
    kReset,         // the connection broke while sending or receiving
    kProtocol,      // the answer was not valid HTTP
    kBodyTooLarge,  // the body exceeded the cap (1 MiB)
    kCancelled,     // the call was cancelled (budget or shutdown)
    kLocal,         // the gateway itself was short of a resource (file descriptors, buffers,
                    // memory, local ports): not the upstream's doing, never a breaker failure
  };
  Transport transport = Transport::kOk;
  unsigned status = 0;  // HTTP status when kOk
  std::string body;
  std::optional<fusebox::Duration> retry_after;  // a Retry-After header, in seconds
  std::string detail;                            // what went wrong, for logs
  // The failure was this instance's own network, not vPIC: the name did not resolve, or the
  // network is unreachable or down from here. Still a failure for the breaker (nothing gets
  // through), but a trip of it is not sent to the fleet (FleetOptions::local_trouble).
  bool own_network = false;

  bool ok() const noexcept { return transport == Transport::kOk; }
};

// "ok", "connect", "tls", "reset", "protocol", "body_too_large", "cancelled", "local".
std::string_view ToString(UpstreamReply::Transport transport) noexcept;

struct BatchItem {
  std::string vin;
  int model_year = 0;  // 0: none
};

struct VpicClientStats {
  std::uint64_t requests = 0;
  std::uint64_t connections_opened = 0;
  std::uint64_t connections_reused = 0;
  std::uint64_t idle_connections = 0;
};

class VpicClient {
 public:
  virtual ~VpicClient() = default;
  // GET /api/vehicles/DecodeVinValues/{vin}?format=json[&modelyear=YYYY]. `vin` is a validated
  // VIN (only VIN characters), so it needs no escaping.
  virtual boost::asio::awaitable<UpstreamReply> DecodeVin(std::string vin, int model_year) = 0;
  // POST /api/vehicles/DecodeVINValuesBatch/ with DATA=vin[,year];vin...&format=json.
  virtual boost::asio::awaitable<UpstreamReply> DecodeBatch(std::vector<BatchItem> items) = 0;
  virtual VpicClientStats Stats() const { return {}; }
};

}  // namespace fusebox::gateway
