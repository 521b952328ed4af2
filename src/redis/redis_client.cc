// RedisClient: one connection on a strand (connection.h), reconnecting with backoff. The same
// connection handling as RedisFleetLink, for plain commands.
#include "fusebox/redis_client.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "connection.h"
#include "fusebox/thread_annotations.h"

namespace fusebox {
namespace {

RedisReply Convert(const redisReply* r) {
  RedisReply out;
  if (r == nullptr) {
    return out;
  }
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.kind = RedisReply::Kind::kString;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.kind = RedisReply::Kind::kStatus;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.kind = RedisReply::Kind::kError;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = RedisReply::Kind::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = RedisReply::Kind::kArray;
      for (std::size_t i = 0; i < r->elements; ++i) {
        out.elements.push_back(Convert(r->element[i]));
      }
      break;
    default:
      out.kind = RedisReply::Kind::kNil;
      break;
  }
  return out;
}

}  // namespace

struct RedisClient::Impl : std::enable_shared_from_this<Impl> {
  Impl(const boost::asio::any_io_executor& executor, RedisClientOptions opts)
      : strand(boost::asio::make_strand(executor)),
        options(std::move(opts)),
        reconnect_timer(strand),
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

  redis_internal::Strand strand;
  const RedisClientOptions options;
  std::shared_ptr<boost::asio::ssl::context> tls;  // rediss://
  std::string tls_error;  // rediss:// whose files did not load: every attempt fails with it
  std::atomic<bool> up{false};
  std::atomic<bool> stopped{false};
  std::shared_ptr<redis_internal::Connection> connection;  // strand only
  std::function<void()> cancel_dial;                       // strand only; set while dialing
  std::uint64_t session = 0;                               // strand only
  boost::asio::steady_timer reconnect_timer;
  Duration backoff;
  redis_internal::PrimaryRecord primary;
  mutable Mutex error_mu;
  std::string last_error FUSEBOX_GUARDED_BY(error_mu);  // "": none since the last login

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
    redis_internal::DialOptions dial{.endpoint = &options.endpoint,
                                     .tls = tls,
                                     .count = 1,
                                     .select_db = {true},
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
            // "connect: ...", "tls: ...", "WRONGPASS ...", "NOPERM ...": kept for last_error();
            // retried with backoff, so that a fixed server, certificate or ACL brings the client
            // back without a restart.
            self->SetError(self->Where(d.address) + d.error);
            self->Fail(id);
            return;
          }
          self->connection = std::move(d.connections.front());
          const std::weak_ptr<Impl> weak = self;
          self->connection->OnLost([weak, id, address = d.address](const std::string& why) {
            if (const std::shared_ptr<Impl> alive = weak.lock()) {
              alive->SetError(alive->Where(address) + "connection lost: " + why);
              alive->Fail(id);
            }
          });
          self->up = true;
          self->backoff = self->options.reconnect_min;
          self->primary.Linked(d.address);
          self->SetError("");
        });
  }

  // With sentinels the server changes: errors say which one they are about.
  std::string Where(const std::string& address) const {
    return options.endpoint.sentinels.empty() || address.empty() ? std::string() : address + ": ";
  }

  void SetError(std::string text) {
    Locked lock(error_mu);
    last_error = std::move(text);
  }

  void Fail(std::uint64_t id) {
    boost::asio::post(strand, [self = shared_from_this(), id] {
      if (id != self->session) {
        return;
      }
      ++self->session;
      self->up = false;
      self->Teardown();
      if (self->stopped) {
        return;
      }
      self->reconnect_timer.expires_after(self->backoff);
      self->backoff = std::min(self->backoff * 2, self->options.reconnect_max);
      self->reconnect_timer.async_wait([keep = self](const boost::system::error_code& ec) {
        if (!ec) {
          keep->Connect();
        }
      });
    });
  }

  void Teardown() {
    if (std::function<void()> cancel = std::exchange(cancel_dial, nullptr)) {
      cancel();
    }
    if (std::shared_ptr<redis_internal::Connection> c = std::exchange(connection, nullptr)) {
      c->Close();  // pending commands get their callbacks with no reply (kDown)
    }
  }

  void Send(const std::vector<std::string>& args, const Callback& done) {
    if (connection == nullptr || !up) {
      done(RedisReply{});
      return;
    }
    // The handler keeps the Impl alive until the reply (or the teardown's null) comes.
    connection->Send(args, [keep = shared_from_this(), done](redisReply* r) {
      done(Convert(r));  // null (the link went down) converts to the empty reply
    });
  }

  void Stop() {
    stopped = true;
    up = false;
    ++session;
    reconnect_timer.cancel();
    Teardown();
  }
};

RedisClient::RedisClient(const boost::asio::any_io_executor& executor, RedisClientOptions options)
    : impl_(std::make_shared<Impl>(executor, std::move(options))) {}

RedisClient::~RedisClient() {
  impl_->stopped = true;
  impl_->up = false;
  try {
    boost::asio::post(impl_->strand, [impl = impl_] { impl->Stop(); });
  } catch (...) {
    // No memory for the handler: the connection is closed when the io_context is destroyed
    // (the Impl's sockets belong to it); stopped already keeps it from reconnecting.
  }
}

void RedisClient::Start() {
  boost::asio::post(impl_->strand, [impl = impl_] {
    if (impl->connection == nullptr && !impl->cancel_dial) {
      impl->Connect();
    }
  });
}

void RedisClient::StopNow() { impl_->Stop(); }

void RedisClient::Command(std::vector<std::string> args, Callback done) {
  if (!impl_->up) {
    done(RedisReply{});  // down: answer at once, without a trip through the strand
    return;
  }
  boost::asio::post(impl_->strand, [impl = impl_, args = std::move(args), done = std::move(done)] {
    impl->Send(args, done);
  });
}

bool RedisClient::connected() const noexcept { return impl_->up.load(); }

std::string RedisClient::last_error() const {
  Locked lock(impl_->error_mu);
  return impl_->last_error;
}

RedisClientStats RedisClient::Stats() const {
  redis_internal::PrimaryRecord::Snapshot primary = impl_->primary.Get();
  RedisClientStats stats{.connected = impl_->up.load(),
                         .tls = impl_->options.endpoint.tls,
                         .primary = std::move(primary.address),
                         .primary_changes = primary.changes,
                         .last_primary_change = primary.last_change,
                         .last_error = last_error()};
  return stats;
}

}  // namespace fusebox
