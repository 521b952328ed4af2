// RedisFleetLink: the protocol of docs/fleet.md on two connections (connection.h: one for
// commands, one subscribed to the channel: a subscribed connection accepts no other command),
// both on one strand, to the one server Dial found (the primary, with Sentinel). Everything that
// touches a connection runs on the strand; the public members only post work there, so no caller
// ever waits on Redis.
#include "fusebox/redis_fleet.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <charconv>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "connection.h"
#include "fleet_signature.h"
#include "fusebox/thread_annotations.h"

namespace fusebox {
namespace {

// Stores the transition unless the stored one is newer (generation, then sender id), stamps it
// with Redis's own clock (so that a later reader can compute its age), and publishes it.
// A stored generation that is not a number, or is out of the bounds of fleet.h (above
// kMaxFleetGeneration, or more than kMaxFleetGenerationLead ahead of this one) was not written
// by a sane peer: it is overwritten, else it would block every publish for good.
// ARGV[7] = "1" (signed fleets only): the stored one failed the sender's signature check, so
// its generation means nothing: overwrite it (else a forger could block every publish).
// KEYS[1] state key; ARGV: generation, sender, message, channel, max generation, max lead, force.
// Returns 1 if published.
constexpr const char* kPublishScript = R"lua(
local cur = redis.call('HMGET', KEYS[1], 'gen', 'sender')
local g = tonumber(ARGV[1])
local cg = tonumber(cur[1])
if ARGV[7] ~= '1' and cg and cg >= 1 and cg <= tonumber(ARGV[5]) and cg <= g + tonumber(ARGV[6]) then
  if cg > g or (cg == g and (cur[2] or '') >= ARGV[2]) then return 0 end
end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'gen', ARGV[1], 'sender', ARGV[2], 'msg', ARGV[3], 'at_ms', now_ms)
redis.call('PUBLISH', ARGV[4], ARGV[3])
return 1
)lua";

// Reads the stored transition and its age in milliseconds on Redis's clock, in one round trip.
// The message's size is checked on Redis (HSTRLEN) before it is sent: a stored value larger than
// a message can be is never read whole. Returns nil when nothing is stored, -1 for an entry out
// of bounds (too long, or a stamp that is not a number), else {msg, age_ms}, the age clamped to
// [0, ARGV[2]] (a stamp in the future is no age; one from long ago is the largest cooldown).
// KEYS[1] state key; ARGV: max message bytes, max age in ms.
constexpr const char* kReadScript = R"lua(
local len = redis.call('HSTRLEN', KEYS[1], 'msg')
if len == 0 then return false end
if len > tonumber(ARGV[1]) then return -1 end
local v = redis.call('HMGET', KEYS[1], 'msg', 'at_ms')
local at = tonumber(v[2])
if not at then return -1 end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local age = math.max(0, math.min(now_ms - at, tonumber(ARGV[2])))
return {v[1], string.format('%d', age)}
)lua";

// The probe lease: SET NX PX over the slot keys, all passed as KEYS (no key name is made inside
// the script, so a cluster proxy can route it; they share the breaker's hash tag), atomically.
// ARGV: instance, ttl in ms. Returns {slots held by this instance, another holder or ''}.
constexpr const char* kLeaseScript = R"lua(
local won = 0
local holder = ''
for i = 1, #KEYS do
  local cur = redis.call('GET', KEYS[i])
  if not cur then
    redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2])
    won = won + 1
  elseif cur == ARGV[1] then
    won = won + 1
  elseif holder == '' then
    holder = cur
  end
end
return {won, holder}
)lua";

template <typename Int>
bool ParseWhole(std::string_view text, Int& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

std::string_view ReplyText(const redisReply* r) {
  if (r == nullptr || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)) {
    return {};
  }
  return {r->str, r->len};
}

}  // namespace

struct RedisFleetLink::Impl : std::enable_shared_from_this<Impl> {
  using Strand = boost::asio::strand<boost::asio::any_io_executor>;

  Impl(const boost::asio::any_io_executor& executor, RedisFleetOptions opts)
      : strand(boost::asio::make_strand(executor)),
        options(std::move(opts)),
        channel(options.key_prefix + "transitions"),
        reconnect_timer(strand),
        lease_timer(strand),
        backoff(options.reconnect_min) {
    if (options.endpoint.tls) {
      auto context = redis_internal::MakeTlsContext(options.endpoint);
      if (context) {
        tls = std::move(*context);
      } else {
        tls_error = "tls: " + context.error();
      }
    }
  }

  Strand strand;
  const RedisFleetOptions options;
  const std::string channel;
  std::shared_ptr<boost::asio::ssl::context> tls;  // rediss://
  std::string tls_error;  // rediss:// whose files did not load: every attempt fails with it
  redis_internal::PrimaryRecord primary;

  std::atomic<bool> up{false};
  std::atomic<bool> stopped{false};
  std::atomic<std::uint64_t> connects{0}, disconnects{0}, published{0}, dropped{0}, received{0},
      malformed{0}, lease_requests{0}, unauthenticated{0};

  Mutex receiver_mu;
  FleetReceiver* receiver FUSEBOX_GUARDED_BY(receiver_mu) = nullptr;  // called with it held
  mutable Mutex error_mu;
  std::string last_error FUSEBOX_GUARDED_BY(error_mu);  // why the link is down; "" when up

  // The rest: strand only.
  std::shared_ptr<redis_internal::Connection> cmd;
  std::shared_ptr<redis_internal::Connection> sub;
  std::function<void()> cancel_dial;  // set while dialing
  std::string address;                // of the server dialed
  bool subscribed = false;
  std::uint64_t session = 0;
  std::set<std::string> watched;
  struct Lease {
    std::uint64_t generation = 0;
    std::uint32_t slots = 1;
    Duration ttl{};
    bool in_flight = false;
  };
  std::map<std::string, Lease> leases;
  boost::asio::steady_timer reconnect_timer;
  boost::asio::steady_timer lease_timer;
  bool lease_timer_armed = false;
  Duration backoff;

  // Every key of one breaker has the breaker's name as its hash tag ({vpic}), so that a Redis
  // Cluster (or a proxy in front of one) keeps them in one slot: a script may touch them together.
  std::string BreakerKey(const std::string& breaker, std::string_view what) const {
    return options.key_prefix + "{" + breaker + "}:" + std::string(what);
  }
  std::string StateKey(const std::string& breaker) const { return BreakerKey(breaker, "state"); }

  template <typename F>
  void Deliver(F&& f) {
    Locked lock(receiver_mu);
    if (receiver != nullptr) {
      f(*receiver);
    }
  }

  template <typename F>
  void Post(F&& f) {
    boost::asio::post(strand,
                      [self = shared_from_this(), f = std::forward<F>(f)]() mutable { f(*self); });
  }

  // ---- connections ----

  void Connect() {
    if (stopped) {
      return;
    }
    const std::uint64_t id = ++session;
    if (!tls_error.empty()) {
      SetError(tls_error);
      Fail(id);
      return;
    }
    // Both connections log in (AUTH) before they count; the subscriber needs no SELECT (channels
    // are the server's, not a DB's).
    redis_internal::DialOptions dial{.endpoint = &options.endpoint,
                                     .tls = tls,
                                     .count = 2,
                                     .select_db = {true, false},
                                     .timeout = options.connect_timeout,
                                     .sentinel_timeout = options.sentinel_timeout};
    cancel_dial = redis_internal::Dial(
        strand, dial, [self = shared_from_this(), id](redis_internal::Dialed d) {
          if (id != self->session || self->stopped) {
            for (const auto& c : d.connections) {
              c->Close();
            }
            return;  // torn down meanwhile
          }
          self->cancel_dial = nullptr;
          if (!d.error.empty()) {
            // "connect: ...", "tls: ...", "AUTH: WRONGPASS ...": shown in Stats().last_error,
            // retried with backoff.
            self->SetError(self->Where(d.address) + d.error);
            self->Fail(id);
            return;
          }
          self->address = d.address;
          self->cmd = std::move(d.connections[0]);
          self->sub = std::move(d.connections[1]);
          const std::weak_ptr<Impl> weak = self;
          for (const auto& c : {self->cmd, self->sub}) {
            c->OnLost([weak, id, address = d.address](const std::string& why) {
              if (const std::shared_ptr<Impl> alive = weak.lock()) {
                alive->SetError(alive->Where(address) + "connection lost: " + why);
                alive->Fail(id);
              }
            });
          }
          self->sub->Subscribe({"SUBSCRIBE", self->channel}, [weak](redisReply* reply) {
            if (const std::shared_ptr<Impl> alive = weak.lock()) {
              alive->OnSubscription(reply);
            }
          });
        });
  }

  // With sentinels the server changes: errors say which one they are about.
  std::string Where(const std::string& server) const {
    return options.endpoint.sentinels.empty() || server.empty() ? std::string() : server + ": ";
  }

  void SetError(std::string text) {
    Locked lock(error_mu);
    last_error = std::move(text);
  }

  // Gives up the connection of session `id`: tears down what is left of it (outside the
  // connections' callbacks) and reconnects after the backoff.
  void Fail(std::uint64_t id) {
    Post([id](Impl& self) {
      if (id != self.session) {
        return;
      }
      ++self.session;  // later callbacks of this session change nothing
      self.up = false;
      ++self.disconnects;
      self.Teardown();
      if (self.stopped) {
        return;
      }
      for (auto& [name, lease] : self.leases) {
        lease.in_flight = false;
      }
      self.reconnect_timer.expires_after(self.backoff);
      self.backoff = std::min(self.backoff * 2, self.options.reconnect_max);
      self.reconnect_timer.async_wait(
          [keep = self.shared_from_this()](const boost::system::error_code& ec) {
            if (!ec) {
              keep->Connect();
            }
          });
    });
  }

  void Teardown() {
    subscribed = false;
    if (std::function<void()> cancel = std::exchange(cancel_dial, nullptr)) {
      cancel();
    }
    for (const auto& c : {std::exchange(cmd, nullptr), std::exchange(sub, nullptr)}) {
      if (c != nullptr) {
        c->Close();  // pending commands get their null reply
      }
    }
  }

  void MaybeUp() {
    if (cmd == nullptr || sub == nullptr || !subscribed || up) {
      return;
    }
    up = true;
    ++connects;
    SetError("");
    primary.Linked(address);
    backoff = options.reconnect_min;
    for (const std::string& breaker : watched) {
      Reconcile(breaker);
    }
    Deliver([](FleetReceiver& r) { r.OnConnected(); });
    for (auto& [name, lease] : leases) {
      TryLease(name);
    }
  }

  // ---- the subscription ----

  void OnSubscription(const redisReply* reply) {
    if (reply != nullptr && reply->type == REDIS_REPLY_ERROR) {
      // SUBSCRIBE refused (an ACL without the channel): down, saying why, and retried.
      SetError("SUBSCRIBE: " + std::string(reply->str, reply->len));
      Fail(session);
      return;
    }
    if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements < 3) {
      return;
    }
    const std::string_view kind = ReplyText(reply->element[0]);
    if (kind == "subscribe") {
      subscribed = true;
      MaybeUp();
    } else if (kind == "message") {
      // A message larger than any can be is refused unparsed; the connection gives its read
      // buffer back once it is consumed (connection.h).
      OnText(ReplyText(reply->element[2]), Duration(0));
    }
  }

  // The longest text a message may take on the wire: a signed one is longer.
  std::size_t MaxWireBytes() const {
    return kMaxFleetMessageBytes +
           (options.secret.empty() ? 0 : redis_internal::kSignatureOverhead);
  }

  std::int64_t NowMs() const {
    const auto now = options.wall_clock ? options.wall_clock() : std::chrono::system_clock::now();
    return std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  }

  // The wire form of `message`: signed when the link has a secret.
  std::string Encode(const FleetMessage& message) const {
    std::string text = EncodeFleetMessage(message);
    if (options.secret.empty()) {
      return text;
    }
    return redis_internal::SignFleetMessage(options.secret, NowMs(), text);
  }

  void SendPublish(const FleetMessage& message, bool force) {
    Command(
        {"EVAL", kPublishScript, "1", StateKey(message.breaker), std::to_string(message.generation),
         message.sender, Encode(message), channel, std::to_string(kMaxFleetGeneration),
         std::to_string(kMaxFleetGenerationLead), force ? "1" : "0"},
        [](Impl&, redisReply*) {});
  }

  // Whether `text` carries a valid signature of this fleet's secret, within the time bounds.
  bool Verifies(std::string_view text) const {
    if (text.size() > MaxWireBytes()) {
      return false;
    }
    return redis_internal::VerifyFleetMessage(options.secret, text, NowMs(), MaxAgeMs(), SkewMs())
               .check == redis_internal::SignatureCheck::kOk;
  }
  static std::int64_t MaxAgeMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(kMaxFleetCooldown).count();
  }
  std::int64_t SkewMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(options.max_clock_skew).count();
  }

  // A transition from the channel, or a stored one `age` old (at most kMaxFleetCooldown).
  void OnText(std::string_view text, Duration age) {
    ++received;
    if (!options.secret.empty()) {
      // The MAC first: nothing unauthenticated is parsed. A stored message is as old as its
      // age on Redis's clock says, so the time bound is the signature's (kMaxFleetCooldown).
      const redis_internal::VerifiedMessage verified = redis_internal::VerifyFleetMessage(
          options.secret, text.substr(0, MaxWireBytes() + 1), NowMs(), MaxAgeMs(), SkewMs());
      if (verified.check != redis_internal::SignatureCheck::kOk || text.size() > MaxWireBytes()) {
        ++unauthenticated;
        return;
      }
      text = verified.message;
    }
    Result<FleetMessage, FleetRefusal> message = DecodeFleetMessage(text);  // bounds first
    if (!message) {
      ++malformed;
      return;
    }
    if (!watched.contains(message->breaker)) {
      return;
    }
    message->remaining_cooldown = std::max(Duration(0), message->remaining_cooldown - age);
    Deliver([&](FleetReceiver& r) { r.OnMessage(*message); });
  }

  // ---- commands ----

  // `done` gets the reply, or null when the link went down; the Impl is kept alive until then.
  void Command(const std::vector<std::string>& args, std::function<void(Impl&, redisReply*)> done) {
    if (cmd == nullptr) {
      done(*this, nullptr);
      return;
    }
    cmd->Send(args, [keep = shared_from_this(), done = std::move(done)](redisReply* r) {
      done(*keep, r);
    });
  }

  void Reconcile(const std::string& breaker) {
    if (!up) {
      return;
    }
    const std::int64_t max_age_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(kMaxFleetCooldown).count();
    Command({"EVAL", kReadScript, "1", StateKey(breaker), std::to_string(MaxWireBytes()),
             std::to_string(max_age_ms)},
            [max_age_ms](Impl& self, redisReply* reply) {
              if (reply != nullptr && reply->type == REDIS_REPLY_INTEGER) {
                ++self.received;
                ++self.malformed;  // stored out of bounds: -1
                return;
              }
              if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
                return;  // nothing stored, or the link went down
              }
              std::int64_t age_ms = 0;
              if (!ParseWhole(ReplyText(reply->element[1]), age_ms)) {
                ++self.received;
                ++self.malformed;
                return;
              }
              // Clamped here too: milliseconds to nanoseconds must not overflow.
              self.OnText(
                  ReplyText(reply->element[0]),
                  std::chrono::milliseconds(std::clamp<std::int64_t>(age_ms, 0, max_age_ms)));
            });
  }

  void TryLease(const std::string& breaker) {
    auto it = leases.find(breaker);
    if (!up || it == leases.end() || it->second.in_flight) {
      return;
    }
    Lease& lease = it->second;
    lease.in_flight = true;
    ++lease_requests;
    const auto ttl_ms =
        std::max<std::int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(lease.ttl).count());
    std::vector<std::string> command{"EVAL", kLeaseScript, std::to_string(lease.slots)};
    for (std::uint32_t slot = 0; slot < lease.slots; ++slot) {
      command.push_back(BreakerKey(
          breaker, "lease:" + std::to_string(lease.generation) + ":" + std::to_string(slot)));
    }
    command.push_back(options.instance);
    command.push_back(std::to_string(ttl_ms));
    Command(command, [breaker, generation = lease.generation](Impl& self, redisReply* reply) {
      auto found = self.leases.find(breaker);
      if (found == self.leases.end() || found->second.generation != generation) {
        return;  // released, or asked again for a newer generation
      }
      found->second.in_flight = false;
      if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
          reply->element[0]->type != REDIS_REPLY_INTEGER) {
        self.ArmLeaseRetry();
        return;
      }
      const auto won = static_cast<std::uint32_t>(reply->element[0]->integer);
      const std::string holder(won > 0 ? std::string_view(self.options.instance)
                                       : ReplyText(reply->element[1]));
      if (won > 0) {
        self.leases.erase(found);
      } else {
        self.ArmLeaseRetry();
      }
      self.Deliver([&](FleetReceiver& r) { r.OnLease(breaker, generation, won, holder); });
    });
  }

  void ArmLeaseRetry() {
    if (lease_timer_armed || stopped) {
      return;
    }
    lease_timer_armed = true;
    lease_timer.expires_after(options.lease_retry);
    lease_timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      self->lease_timer_armed = false;
      if (ec) {
        return;
      }
      std::vector<std::string> names;
      for (const auto& [name, lease] : self->leases) {
        names.push_back(name);
      }
      for (const std::string& name : names) {
        self->TryLease(name);
      }
    });
  }

  void Stop() {
    stopped = true;
    up = false;
    ++session;
    reconnect_timer.cancel();
    lease_timer.cancel();
    Teardown();
  }
};

RedisFleetLink::RedisFleetLink(const boost::asio::any_io_executor& executor,
                               RedisFleetOptions options)
    : impl_(std::make_shared<Impl>(executor, std::move(options))) {}

RedisFleetLink::~RedisFleetLink() {
  impl_->stopped = true;
  impl_->up = false;
  try {
    SetReceiver(nullptr);
    impl_->Post([](Impl& self) { self.Stop(); });
  } catch (...) {
    // No memory for the handler: the connections are closed when the io_context is destroyed
    // (the Impl's sockets belong to it); stopped already keeps them from reconnecting.
  }
}

void RedisFleetLink::Start() {
  impl_->Post([](Impl& self) {
    if (self.cmd == nullptr && self.sub == nullptr && !self.cancel_dial) {
      self.Connect();
    }
  });
}

void RedisFleetLink::StopNow() {
  SetReceiver(nullptr);
  impl_->Stop();
}

void RedisFleetLink::SetReceiver(FleetReceiver* receiver) {
  Locked lock(impl_->receiver_mu);
  impl_->receiver = receiver;
}

void RedisFleetLink::Watch(const std::string& breaker) {
  impl_->Post([breaker](Impl& self) {
    if (self.watched.insert(breaker).second) {
      self.Reconcile(breaker);
    }
  });
}

void RedisFleetLink::Publish(const FleetMessage& message) {
  if (!impl_->up) {
    ++impl_->dropped;
    return;
  }
  impl_->Post([message](Impl& self) {
    if (!self.up) {
      ++self.dropped;
      return;
    }
    ++self.published;
    if (self.options.secret.empty()) {
      self.SendPublish(message, false);
      return;
    }
    // Signed: the stored state counts only if its signature holds. One that does not (a forger
    // wrote it, or it is too old) must not outrank this message by its generation: read and
    // check it first, then publish, forcing the store when it failed. A transition is rare; the
    // extra round trip is cheap.
    self.Command(
        {"EVAL", kReadScript, "1", self.StateKey(message.breaker),
         std::to_string(self.MaxWireBytes()), "0"},
        [message](Impl& link, redisReply* reply) {
          bool force = false;
          if (reply != nullptr && reply->type == REDIS_REPLY_INTEGER) {
            force = true;  // stored out of bounds
          } else if (reply != nullptr && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2) {
            force = !link.Verifies(ReplyText(reply->element[0]));
          }
          link.SendPublish(message, force);
        });
  });
}

void RedisFleetLink::AcquireLease(const std::string& breaker, std::uint64_t generation,
                                  std::uint32_t slots, Duration ttl) {
  impl_->Post([=](Impl& self) {
    self.leases[breaker] = Impl::Lease{generation, std::max(slots, 1U), ttl, false};
    self.TryLease(breaker);
  });
}

void RedisFleetLink::ReleaseLease(const std::string& breaker) {
  impl_->Post([breaker](Impl& self) { self.leases.erase(breaker); });
}

bool RedisFleetLink::connected() const noexcept { return impl_->up.load(); }

RedisFleetStats RedisFleetLink::Stats() const {
  const Impl& s = *impl_;
  std::string last_error;
  {
    Locked lock(s.error_mu);
    last_error = s.last_error;
  }
  redis_internal::PrimaryRecord::Snapshot primary = s.primary.Get();
  return RedisFleetStats{.connected = s.up.load(),
                         .connects = s.connects.load(),
                         .disconnects = s.disconnects.load(),
                         .published = s.published.load(),
                         .dropped_while_down = s.dropped.load(),
                         .received = s.received.load(),
                         .malformed = s.malformed.load(),
                         .lease_requests = s.lease_requests.load(),
                         .unauthenticated = s.unauthenticated.load(),
                         .last_error = std::move(last_error),
                         .tls = s.options.endpoint.tls,
                         .primary = std::move(primary.address),
                         .primary_changes = primary.changes,
                         .last_primary_change = primary.last_change};
}

const RedisFleetOptions& RedisFleetLink::options() const noexcept { return impl_->options; }

}  // namespace fusebox
