// vin-gateway/config/reload_reader.h
//
// SIGHUP's reading of the config file, off the serving thread. A config file may be slow to read
// (a large file, a slow disk, a network mount), and the thread that takes the signal also serves
// requests: a ReloadReader does the reading and parsing on a thread of its own and hands the
// result to `deliver`, which main posts back to the event loop to apply.
//
// Requests that arrive while a read is running are coalesced: one more read follows the current
// one, however many requests came in meanwhile (the file's latest contents are what counts, not
// one read per signal).
//
// Thread safety: Request() and Stop() may be called from any thread. `read` and `deliver` run on
// the reader's thread, one call at a time; `deliver` never runs after Stop() has returned.
// Stop() (and the destructor) never waits for a read in progress: a read stuck in the kernel is
// left to finish on its own, its result dropped (it holds only what `read` captured).
// Time: none.
//
// Example:
//   ReloadReader reader([args] { return ParseCommandLine(args); },
//                       [&io](Reread reread) { net::post(io, [r = std::move(reread)] {...}); });
//   reader.Request();  // on SIGHUP
//   reader.Stop();     // at shutdown
#pragma once

#include <functional>
#include <memory>
#include <thread>

#include "config/config.h"

namespace fusebox::gateway {

class ReloadReader {
 public:
  // What one read gives: the config the file and flags now make, or why it is refused.
  using Reread = fusebox::Result<CommandLine, ConfigError>;

  // Starts the reader's thread, idle until Request().
  ReloadReader(std::function<Reread()> read, std::function<void(Reread)> deliver);
  ReloadReader(const ReloadReader&) = delete;
  ReloadReader& operator=(const ReloadReader&) = delete;
  ~ReloadReader();

  // Asks for a read: starts one now, or one after the read in progress.
  void Request();
  // No read starts and nothing is delivered after this returns. Joins the thread when it is idle;
  // leaves it to end by itself when a read is in progress. Idempotent.
  void Stop();

 private:
  struct State;
  static void Loop(const std::shared_ptr<State>& state);

  // Shared with the thread, which may outlive this object (a read in progress at Stop()).
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace fusebox::gateway
