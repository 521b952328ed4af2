// vin-gateway/http/log_writer.h
//
// The gateway's log output (one access-log line per request, and its events), written without a
// write(2) per line and without ever making a request wait for a slow output.
//
//   - Per loop turn: on a thread that called GatherPerTurn(io) (each event-loop thread, before it
//     runs its io_context), the first line of a turn is written at once, and the lines after it
//     gather in that thread's batch until a handler posted behind the work then queued writes
//     them, before the loop waits for new events: two system calls for all the lines of a busy
//     turn, and an idle gateway's line is there as soon as it was when every line was written at
//     once. Elsewhere Write() writes at once.
//   - Never blocked by the output: a batch goes straight to the descriptor only while the
//     descriptor takes it without blocking (a file, /dev/null; a pipe or terminal with room, in
//     PIPE_BUF pieces after a zero-timeout poll). What it does not take goes to a writer thread,
//     which waits for the output instead of the loop; later lines queue behind it, in order.
//   - Nothing is lost while the output takes it: Flush() (and the destructor) return once every
//     line written before (the calling thread's batch included) is handed to the descriptor. An
//     event-loop thread calls FlushThisThread() after its loop stops.
//   - Bounded: while the output takes nothing (a pipe nobody reads), the queue holds up to
//     `max_pending_bytes`; lines beyond are dropped and counted, never waited for, and the first
//     line written after the output takes lines again says how many were dropped. A line the
//     descriptor refuses (EPIPE, ENOSPC) is counted the same way.
//
// Thread safety: Write(), Flush() and dropped() from any thread; GatherPerTurn() and
// FlushThisThread() concern the calling thread. Time: none of its own.
//
// Example:
//   LogWriter log(STDERR_FILENO);
//   std::thread loop([&] { log.GatherPerTurn(io); io.run(); log.FlushThisThread(); });
//   log.Write(FormatAccessRecord(record, format, now));  // no '\n': Write adds it
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "fusebox/thread_annotations.h"

namespace fusebox::gateway {

struct LogWriterOptions {
  std::size_t max_pending_bytes = std::size_t{8} * 1024 * 1024;
  // The line that reports `count` dropped lines (without '\n'), in the log's own format; empty:
  // drops are only counted.
  std::function<std::string(std::uint64_t count)> dropped_line = nullptr;
};

class LogWriter {
 public:
  // Writes to `fd` (not owned; it must outlive the writer).
  explicit LogWriter(int fd, LogWriterOptions options = {});
  ~LogWriter();  // Flush(), then the writer thread ends
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // `line` and a newline: into this thread's turn batch, or written at once.
  void Write(std::string_view line);
  // From now on, lines written on this thread are batched per turn of `io`, which this thread
  // runs (until the thread ends, or this writer is destroyed).
  void GatherPerTurn(boost::asio::io_context& io);
  // Hands this thread's turn batch to the output now.
  void FlushThisThread();
  // Returns once every line written before the call (this thread's batch included) has been
  // handed to the descriptor, or counted as dropped.
  void Flush();
  // Lines dropped so far (the queue full, or refused by the descriptor).
  std::uint64_t dropped() const;

 private:
  struct Turn;
  static Turn& ThisThreadTurn();
  // Complete lines (`count` of them) to the descriptor, in order after everything before.
  void WriteLines(std::string_view lines, std::uint64_t count) FUSEBOX_EXCLUDES(mu_);
  // Writes what the descriptor takes without blocking and returns how many bytes it took;
  // `refused` when it failed for good (EPIPE, ENOSPC...).
  std::size_t WriteWithoutBlocking(std::string_view data, bool& refused);
  void Run();
  // Writes all of `batch`, waiting for the output; drops (and counts the lines of) what it
  // refuses.
  void WriteOut(const std::string& batch) FUSEBOX_EXCLUDES(mu_);

  // Which writer a thread's turn batch belongs to: a number never reused, not the address (a
  // writer made where an earlier one was would take that writer's batch and its io_context,
  // which may be gone).
  const std::uint64_t id_;
  const int fd_;
  const LogWriterOptions options_;
  const bool never_blocks_;  // a regular file or /dev/null: write(2) never waits for a reader
  mutable fusebox::Mutex mu_;
  std::condition_variable_any wake_;      // the writer thread: lines queued, or stopping
  std::condition_variable_any progress_;  // Flush(): the queue written
  // The queue for the writer thread, and the lines in it.
  std::string pending_ FUSEBOX_GUARDED_BY(mu_);
  std::uint64_t pending_lines_ FUSEBOX_GUARDED_BY(mu_) = 0;
  // The writer thread is writing a batch.
  bool writing_ FUSEBOX_GUARDED_BY(mu_) = false;
  std::uint64_t dropped_ FUSEBOX_GUARDED_BY(mu_) = 0;
  std::uint64_t dropped_reported_ FUSEBOX_GUARDED_BY(mu_) = 0;
  bool stopping_ FUSEBOX_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace fusebox::gateway
