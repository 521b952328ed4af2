#include "asio_hiredis.h"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace fusebox::redis_internal {
namespace {

using boost::asio::posix::stream_descriptor;

class AsioEvents : public std::enable_shared_from_this<AsioEvents> {
 public:
  AsioEvents(redisAsyncContext* context, const boost::asio::any_io_executor& executor)
      : context_(context), socket_(executor, context->c.fd) {}

  // The owner reference hiredis holds through ev.data; dropped by Cleanup.
  std::shared_ptr<AsioEvents> self;

  void AddRead() {
    want_read_ = true;
    ArmRead();
  }
  void DelRead() { want_read_ = false; }
  void AddWrite() {
    want_write_ = true;
    ArmWrite();
  }
  void DelWrite() { want_write_ = false; }

  void Cleanup() {
    context_ = nullptr;
    want_read_ = false;
    want_write_ = false;
    boost::system::error_code ignored;
    socket_.cancel(ignored);
    (void)socket_.release();  // hiredis closes the descriptor
    self.reset();             // waits in flight still hold a reference
  }

 private:
  void ArmRead() {
    if (reading_ || context_ == nullptr) {
      return;
    }
    reading_ = true;
    socket_.async_wait(stream_descriptor::wait_read,
                       [keep = shared_from_this()](const boost::system::error_code& ec) {
                         keep->reading_ = false;
                         if (ec || keep->context_ == nullptr || !keep->want_read_) {
                           return;
                         }
                         redisAsyncHandleRead(keep->context_);  // may clean the context up
                         if (keep->context_ != nullptr && keep->want_read_) {
                           keep->ArmRead();
                         }
                       });
  }
  void ArmWrite() {
    if (writing_ || context_ == nullptr) {
      return;
    }
    writing_ = true;
    socket_.async_wait(stream_descriptor::wait_write,
                       [keep = shared_from_this()](const boost::system::error_code& ec) {
                         keep->writing_ = false;
                         if (ec || keep->context_ == nullptr || !keep->want_write_) {
                           return;
                         }
                         redisAsyncHandleWrite(keep->context_);
                         if (keep->context_ != nullptr && keep->want_write_) {
                           keep->ArmWrite();
                         }
                       });
  }

  redisAsyncContext* context_;
  stream_descriptor socket_;
  bool want_read_ = false;
  bool want_write_ = false;
  bool reading_ = false;
  bool writing_ = false;
};

AsioEvents* From(void* data) { return static_cast<AsioEvents*>(data); }

// hiredis hands `privdata` back to the callback; the callback owns and frees the handler.
void OnReply(redisAsyncContext* /*context*/, void* reply, void* privdata) {
  const std::unique_ptr<ReplyHandler> handler(static_cast<ReplyHandler*>(privdata));
  (*handler)(static_cast<redisReply*>(reply));
}

}  // namespace

bool AttachToAsio(redisAsyncContext* context, const boost::asio::any_io_executor& executor) {
  if (context->ev.data != nullptr) {
    return false;
  }
  auto events = std::make_shared<AsioEvents>(context, executor);
  events->self = events;
  context->ev.data = events.get();
  context->ev.addRead = [](void* data) { From(data)->AddRead(); };
  context->ev.delRead = [](void* data) { From(data)->DelRead(); };
  context->ev.addWrite = [](void* data) { From(data)->AddWrite(); };
  context->ev.delWrite = [](void* data) { From(data)->DelWrite(); };
  context->ev.cleanup = [](void* data) { From(data)->Cleanup(); };
  return true;
}

void SendCommand(redisAsyncContext* context, const std::vector<std::string>& args,
                 ReplyHandler on_reply) {
  if (context == nullptr) {
    on_reply(nullptr);
    return;
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto handler = std::make_unique<ReplyHandler>(std::move(on_reply));
  if (redisAsyncCommandArgv(context, &OnReply, handler.get(), static_cast<int>(argv.size()),
                            argv.data(), lengths.data()) == REDIS_OK) {
    (void)handler.release();  // OnReply owns it now
  } else {
    (*handler)(nullptr);
  }
}

namespace {

void LoginStep(redisAsyncContext* context,
               std::shared_ptr<std::vector<std::vector<std::string>>> steps, std::size_t next,
               LoginDone done) {
  if (next == steps->size()) {
    done("");
    return;
  }
  SendCommand(context, (*steps)[next],
              [context, steps, next, done = std::move(done)](redisReply* reply) mutable {
                if (reply == nullptr) {
                  done("connection lost");
                } else if (reply->type == REDIS_REPLY_ERROR) {
                  done((*steps)[next][0] + ": " + std::string(reply->str, reply->len));
                } else {
                  LoginStep(context, std::move(steps), next + 1, std::move(done));
                }
              });
}

}  // namespace

void Login(redisAsyncContext* context, const RedisEndpoint& endpoint, LoginDone done) {
  auto steps = std::make_shared<std::vector<std::vector<std::string>>>();
  if (!endpoint.password.empty()) {
    steps->push_back(endpoint.user.empty()
                         ? std::vector<std::string>{"AUTH", endpoint.password}
                         : std::vector<std::string>{"AUTH", endpoint.user, endpoint.password});
  }
  if (endpoint.db != 0) {
    steps->push_back({"SELECT", std::to_string(endpoint.db)});
  }
  LoginStep(context, std::move(steps), 0, std::move(done));
}

}  // namespace fusebox::redis_internal
