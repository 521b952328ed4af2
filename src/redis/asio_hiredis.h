// Drives a hiredis async context on an Asio executor: hiredis tells us when it wants to read or
// write its socket (the ev.addRead/delRead/addWrite/delWrite hooks), and we wait for that on the
// socket's descriptor with async_wait, then let hiredis do the I/O. Nothing blocks.
//
// Every hiredis call on the context, and so every hook, must run on `executor` (a strand when
// the io_context has several threads). The adapter frees itself when hiredis cleans up the
// context; the descriptor is released, not closed: hiredis owns and closes the fd.
#pragma once

#include "fusebox/redis_url.h"

#include <hiredis/async.h>

#include <functional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

namespace fusebox::redis_internal {

// Installs the hooks on `context`. Returns false when they could not be installed (the context
// already has an event library attached).
bool AttachToAsio(redisAsyncContext* context, const boost::asio::any_io_executor& executor);

// What a command's reply goes to: the reply, or null when the context went down (or was freed)
// before it came. The reply belongs to hiredis and is freed when the handler returns.
using ReplyHandler = std::function<void(redisReply* reply)>;

// Sends `args` as one command (binary-safe: each argument with its length) on `context`, on its
// executor. `on_reply` runs exactly once: with the reply or null as above, or at once with null
// when `context` is null or hiredis refuses the command (the context is disconnecting).
void SendCommand(redisAsyncContext* context, const std::vector<std::string>& args,
                 ReplyHandler on_reply);

// What a login ends with: "" once every step answered, else why not ("AUTH: WRONGPASS ...",
// "SELECT: ...", or "connection lost" when the context went down meanwhile).
using LoginDone = std::function<void(const std::string& error)>;

// Logs in on a freshly connected `context`, one command at a time: AUTH [USER] PASSWORD when
// `endpoint` has a password, then SELECT DB when it is not 0. `done` runs exactly once, on the
// context's executor. The error never holds the password (Redis's refusals do not echo it).
void Login(redisAsyncContext* context, const RedisEndpoint& endpoint, LoginDone done);

}  // namespace fusebox::redis_internal
