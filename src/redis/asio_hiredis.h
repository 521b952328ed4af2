// Drives a hiredis async context on an Asio executor: hiredis tells us when it wants to read or
// write its socket (the ev.addRead/delRead/addWrite/delWrite hooks), and we wait for that on the
// socket's descriptor with async_wait, then let hiredis do the I/O. Nothing blocks.
//
// Every hiredis call on the context, and so every hook, must run on `executor` (a strand when
// the io_context has several threads). The adapter frees itself when hiredis cleans up the
// context; the descriptor is released, not closed: hiredis owns and closes the fd.
#pragma once

#include <hiredis/async.h>

#include <boost/asio/any_io_executor.hpp>

namespace fusebox::redis_internal {

// Installs the hooks on `context`. Returns false when they could not be installed (the context
// already has an event library attached).
bool AttachToAsio(redisAsyncContext* context, const boost::asio::any_io_executor& executor);

}  // namespace fusebox::redis_internal
