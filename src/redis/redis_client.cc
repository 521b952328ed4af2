// RedisClient: one hiredis async connection on a strand (asio_hiredis.h), reconnecting with
// backoff. The same connection handling as RedisFleetLink, for plain commands.
#include "fusebox/redis_client.h"

#include <hiredis/async.h>
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

#include "asio_hiredis.h"
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
        connect_timer(strand),
        backoff(options.reconnect_min) {}

  boost::asio::strand<boost::asio::any_io_executor> strand;
  const RedisClientOptions options;
  std::atomic<bool> up{false};
  std::atomic<bool> stopped{false};
  redisAsyncContext* ac = nullptr;  // strand only
  std::uint64_t session = 0;        // strand only
  boost::asio::steady_timer reconnect_timer;
  boost::asio::steady_timer connect_timer;
  Duration backoff;
  mutable Mutex error_mu;
  std::string last_error FUSEBOX_GUARDED_BY(error_mu);  // "": none since the last login

  static Impl* Of(const redisAsyncContext* c) { return static_cast<Impl*>(c->data); }

  void Connect() {
    if (stopped) {
      return;
    }
    ++session;
    ac = redisAsyncConnect(options.endpoint.host.c_str(), options.endpoint.port);
    if (ac == nullptr || ac->err != 0) {
      if (ac != nullptr) {
        redisAsyncFree(ac);
        ac = nullptr;
      }
      Fail(session);
      return;
    }
    ac->data = this;
    redis_internal::AttachToAsio(ac, strand);
    redisAsyncSetConnectCallback(ac, &Impl::OnConnect);
    redisAsyncSetDisconnectCallback(ac, &Impl::OnDisconnect);
    connect_timer.expires_after(options.connect_timeout);
    connect_timer.async_wait(
        [self = shared_from_this(), id = session](const boost::system::error_code& ec) {
          if (!ec && !self->up && id == self->session) {
            self->Fail(id);
          }
        });
  }

  static void OnConnect(const redisAsyncContext* c, int status) {
    Impl* self = Of(c);
    if (self == nullptr || c != self->ac) {
      return;
    }
    if (status != REDIS_OK) {
      self->SetError(std::string("connect: ") + c->errstr);
      self->ac = nullptr;  // hiredis frees it after this callback
      self->Fail(self->session);
      return;
    }
    redis_internal::Login(
        self->ac, self->options.endpoint,
        [keep = self->shared_from_this(), id = self->session](const std::string& error) {
          if (id != keep->session) {
            return;  // torn down meanwhile
          }
          if (!error.empty()) {
            // "WRONGPASS ...", "NOPERM ...": kept for last_error(); dropped and retried with
            // backoff, so that a fixed password or ACL brings the link back without a restart.
            keep->SetError(error);
            keep->Fail(id);
            return;
          }
          keep->up = true;
          keep->backoff = keep->options.reconnect_min;
          keep->connect_timer.cancel();
          keep->SetError("");
        });
  }

  void SetError(std::string text) {
    Locked lock(error_mu);
    last_error = std::move(text);
  }

  static void OnDisconnect(const redisAsyncContext* c, int /*status*/) {
    Impl* self = Of(c);
    if (self == nullptr || c != self->ac) {
      return;
    }
    self->ac = nullptr;
    self->Fail(self->session);
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
    connect_timer.cancel();
    if (redisAsyncContext* c = std::exchange(ac, nullptr)) {
      c->data = nullptr;
      redisAsyncFree(c);  // pending commands get their callbacks with no reply (kDown)
    }
  }

  void Send(const std::vector<std::string>& args, const Callback& done) {
    if (ac == nullptr || !up) {
      done(RedisReply{});
      return;
    }
    // The handler keeps the Impl alive until the reply (or the teardown's null) comes.
    redis_internal::SendCommand(ac, args, [keep = shared_from_this(), done](redisReply* r) {
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
    if (impl->ac == nullptr) {
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

}  // namespace fusebox
