// fusebox/redis_fleet.h (target fusebox::redis)
//
// The FleetLink of fusebox/fleet.h over Redis, on an Asio executor (plain TCP or TLS; hiredis only
// for the wire format): no thread ever blocks on Redis, and no call of a breaker waits for it.
// Every URL of fusebox/redis_url.h works: rediss:// (TLS, the server always verified) and
// redis+sentinel:// (the primary asked of the sentinels before every connection, so that a
// failover is followed on the next reconnect; Stats() says which server is in use). The protocol
// (channel, keys, lease, reconciliation, failure cases) is in docs/fleet.md. In short:
//   - transitions: PUBLISH on one channel `<prefix>transitions`, and stored per breaker in
//     `<prefix>state:<breaker>` unless a newer generation is stored (one Lua script, atomic);
//   - the probe lease: `<prefix>lease:<breaker>:<generation>:<slot>`, set NX with PX = the probe
//     budget, one key per slot (one script over the slots, atomic);
//   - (re)connect: every watched breaker's stored state is read and delivered, its remaining
//     cooldown reduced by the age of the entry on Redis's own clock;
//   - down: connected() is false at once, publishes are dropped (counted), reconnect is tried
//     with exponential backoff; a message that does not parse is counted and dropped.
//
// Thread safety: every member may be called from any thread; the work runs on a strand of the
// executor, and the FleetReceiver is called there. The executor's io_context must run for the
// link to do anything. Destroying the link closes its connections (the strand finishes the
// teardown; the io_context must outlive the link).
//
// Example:
//   auto endpoint = fusebox::ParseRedisUrl("redis://127.0.0.1:6379/0");
//   fusebox::RedisFleetLink link(io.get_executor(), {.endpoint = *endpoint, .instance = "a"});
//   fusebox::Fleet fleet(link, "a");
//   fleet.Attach(breaker);
//   link.Start();
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fusebox/clock.h"
#include "fusebox/fleet.h"
#include "fusebox/redis_url.h"

namespace fusebox {

struct RedisFleetOptions {
  RedisEndpoint endpoint;
  std::string instance;  // this instance's id (the lease holder's name)
  std::string key_prefix = "fusebox:fleet:";
  Duration connect_timeout = std::chrono::seconds(1);
  Duration reconnect_min = std::chrono::milliseconds(100);  // backoff doubles from here...
  Duration reconnect_max = std::chrono::seconds(2);         // ...up to here
  Duration lease_retry = std::chrono::milliseconds(100);    // after a denied lease request
  // Signed messages (docs/fleet.md, "Signed messages"): with a secret, every transition is sent
  // with the sender's time and an HMAC-SHA256 over both, and every one received (on the channel
  // or stored) must carry a valid MAC and be at most kMaxFleetCooldown old (and at most
  // max_clock_skew ahead): anything else is dropped and counted (Stats().unauthenticated). Every
  // instance of a fleet needs the same secret. Empty: unsigned, as before.
  std::string secret = {};
  Duration max_clock_skew = std::chrono::minutes(1);
  // The clock of the signatures' times; null: the system's.
  std::function<std::chrono::system_clock::time_point()> wall_clock = nullptr;
  // Redis Sentinel: the budget of asking one sentinel (connect and answer).
  Duration sentinel_timeout = std::chrono::milliseconds(500);
};

struct RedisFleetStats {
  bool connected = false;
  std::uint64_t connects = 0;            // successful (re)connections
  std::uint64_t disconnects = 0;         // connections lost or attempts failed
  std::uint64_t published = 0;           // transitions sent to Redis
  std::uint64_t dropped_while_down = 0;  // transitions not sent: no connection
  std::uint64_t received = 0;            // messages from the channel and stored states read
  std::uint64_t malformed = 0;           // received but unparsable or out of bounds: dropped
  std::uint64_t lease_requests = 0;
  std::uint64_t unauthenticated = 0;  // with a secret: unsigned, bad MAC, too old or ahead: dropped
  // Why the link is down: "connect: Connection refused", "AUTH: WRONGPASS ...", "tls: ...",
  // "sentinel: ..."; "" when up.
  std::string last_error = {};
  bool tls = false;          // rediss://
  std::string primary = {};  // host:port of the server in use (or last used); "" before the first
  std::uint64_t primary_changes = 0;  // a (re)connection to another server than before (failover)
  std::optional<std::chrono::system_clock::time_point> last_primary_change = std::nullopt;
};

class RedisFleetLink final : public FleetLink {
 public:
  RedisFleetLink(const boost::asio::any_io_executor& executor, RedisFleetOptions options);
  ~RedisFleetLink() override;
  RedisFleetLink(const RedisFleetLink&) = delete;
  RedisFleetLink& operator=(const RedisFleetLink&) = delete;

  // Starts connecting (and reconnecting for as long as the link lives). Returns at once.
  void Start();
  // Closes the connections at once, on the calling thread, and stops reconnecting. Only when no
  // thread runs the executor any more (after io_context::run returned): the destructor's own
  // teardown is posted to the executor, and would never run then (leaking the connections).
  void StopNow();

  void SetReceiver(FleetReceiver* receiver) override;
  void Watch(const std::string& breaker) override;
  void Publish(const FleetMessage& message) override;
  void AcquireLease(const std::string& breaker, std::uint64_t generation, std::uint32_t slots,
                    Duration ttl) override;
  void ReleaseLease(const std::string& breaker) override;
  bool connected() const noexcept override;

  RedisFleetStats Stats() const;
  const RedisFleetOptions& options() const noexcept;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace fusebox
