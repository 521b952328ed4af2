#include "http/log_writer.h"

#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <utility>

#include <boost/asio/post.hpp>

namespace fusebox::gateway {
namespace {

// A turn's batch is handed over early once it is this big (a burst of lines within one turn).
constexpr std::size_t kTurnBatchBytes = std::size_t{64} * 1024;

// A regular file or /dev/null: write(2) returns without waiting for anyone.
bool NeverBlocks(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return false;
  }
  return S_ISREG(st.st_mode) ||
         (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3);  // /dev/null
}

std::uint64_t NextWriterId() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t CountLines(std::string_view data) {
  return static_cast<std::uint64_t>(std::count(data.begin(), data.end(), '\n'));
}

}  // namespace

// The calling thread's batch for the current loop turn.
struct LogWriter::Turn {
  std::uint64_t writer_id = 0;  // the LogWriter::id_ of the writer it gathers for; 0: none
  boost::asio::io_context* io = nullptr;
  std::string lines;
  std::uint64_t count = 0;
  bool posted = false;  // a flush of this batch is queued on `io`
};

LogWriter::Turn& LogWriter::ThisThreadTurn() {
  thread_local Turn turn;
  return turn;
}

LogWriter::LogWriter(int fd, LogWriterOptions options)
    : id_(NextWriterId()),
      fd_(fd),
      options_(std::move(options)),
      never_blocks_(NeverBlocks(fd)),
      thread_([this] { Run(); }) {}

LogWriter::~LogWriter() {
  Flush();
  if (Turn& turn = ThisThreadTurn(); turn.writer_id == id_) {
    turn = Turn{};  // this thread no longer gathers (its io_context may go before the thread)
  }
  {
    fusebox::Locked lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void LogWriter::GatherPerTurn(boost::asio::io_context& io) {
  Turn& turn = ThisThreadTurn();
  turn.writer_id = id_;
  turn.io = &io;
}

void LogWriter::Write(std::string_view line) {
  Turn& turn = ThisThreadTurn();
  if (turn.writer_id == id_ && turn.io != nullptr && !turn.io->stopped()) {
    turn.lines.append(line.data(), line.size());
    turn.lines += '\n';
    ++turn.count;
    if (!turn.posted) {
      // The first line of a turn is written at once (as soon as before: an idle gateway's line
      // is there when its answer is); the turn's later lines gather until a handler queued
      // behind the work of this turn writes them, before the loop polls again.
      turn.posted = true;
      boost::asio::post(*turn.io, [this] { FlushThisThread(); });
      WriteLines(turn.lines, turn.count);
      turn.lines.clear();
      turn.count = 0;
    } else if (turn.lines.size() >= kTurnBatchBytes) {
      WriteLines(turn.lines, turn.count);
      turn.lines.clear();
      turn.count = 0;
    }
    return;
  }
  std::string one;
  one.reserve(line.size() + 1);
  one.append(line.data(), line.size());
  one += '\n';
  WriteLines(one, 1);
}

void LogWriter::FlushThisThread() {
  Turn& turn = ThisThreadTurn();
  turn.posted = false;
  if (turn.writer_id != id_ || turn.count == 0) {
    return;
  }
  WriteLines(turn.lines, turn.count);
  turn.lines.clear();  // keeps its capacity: no allocation per turn once warm
  turn.count = 0;
}

void LogWriter::Flush() {
  FlushThisThread();
  fusebox::Locked lock(mu_);
  progress_.wait(mu_, [&]() FUSEBOX_REQUIRES(mu_) { return pending_.empty() && !writing_; });
}

std::uint64_t LogWriter::dropped() const {
  fusebox::Locked lock(mu_);
  return dropped_;
}

void LogWriter::WriteLines(std::string_view lines, std::uint64_t count) {
  fusebox::Locked lock(mu_);
  if (pending_.empty() && !writing_) {
    // Nothing queued before these lines: straight to the descriptor, as far as it takes them now.
    std::string with_report;
    if (dropped_ > dropped_reported_ && options_.dropped_line) {
      with_report = options_.dropped_line(dropped_ - dropped_reported_);
      with_report += '\n';
      with_report.append(lines.data(), lines.size());
      dropped_reported_ = dropped_;
      lines = with_report;
      ++count;
    }
    bool refused = false;
    const std::size_t done = WriteWithoutBlocking(lines, refused);
    if (done == lines.size()) {
      return;
    }
    lines.remove_prefix(done);
    count = CountLines(lines);
    if (refused) {
      dropped_ += count;
      return;
    }
    if (lines.size() <= options_.max_pending_bytes) {
      pending_.append(lines.data(), lines.size());
      pending_lines_ += count;
      wake_.notify_one();
      return;
    }
  }
  if (pending_.size() + lines.size() > options_.max_pending_bytes) {
    dropped_ += count;  // the output is not keeping up: never wait for it
    return;
  }
  const bool was_empty = pending_.empty();
  pending_.append(lines.data(), lines.size());
  pending_lines_ += count;
  if (was_empty) {
    wake_.notify_one();
  }
}

std::size_t LogWriter::WriteWithoutBlocking(std::string_view data, bool& refused) {
  std::size_t done = 0;
  while (done < data.size()) {
    std::size_t chunk = data.size() - done;
    if (!never_blocks_) {
      // A pipe, terminal or socket: write only what it has room for now (POLLOUT on a pipe
      // means room for PIPE_BUF bytes).
      pollfd out{.fd = fd_, .events = POLLOUT, .revents = 0};
      if (::poll(&out, 1, 0) != 1) {
        break;
      }
      if ((out.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0) {
        if ((out.revents & POLLOUT) == 0) {
          break;
        }
        chunk = std::min<std::size_t>(chunk, PIPE_BUF);
      }  // else the write below reports the error
    }
    const ssize_t n = ::write(fd_, data.data() + done, chunk);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    }
    refused = true;  // EPIPE, ENOSPC, EBADF...
    break;
  }
  return done;
}

void LogWriter::Run() {
  std::string batch;
  fusebox::Locked lock(mu_);
  for (;;) {
    wake_.wait(mu_, [&]() FUSEBOX_REQUIRES(mu_) { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) {
      return;  // stopping, and everything is written
    }
    batch.clear();
    if (dropped_ > dropped_reported_ && options_.dropped_line) {
      batch = options_.dropped_line(dropped_ - dropped_reported_);
      batch += '\n';
      dropped_reported_ = dropped_;
    }
    batch += pending_;
    pending_.clear();
    pending_lines_ = 0;
    writing_ = true;
    mu_.unlock();
    WriteOut(batch);
    mu_.lock();
    writing_ = false;
    progress_.notify_all();
  }
}

void LogWriter::WriteOut(const std::string& batch) {
  std::size_t done = 0;
  while (done < batch.size()) {
    const ssize_t n = ::write(fd_, batch.data() + done, batch.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd out{.fd = fd_, .events = POLLOUT, .revents = 0};
      ::poll(&out, 1, 100);  // a non-blocking descriptor: wait until it takes more
      continue;
    }
    // Refused (EPIPE, ENOSPC, EBADF...): the rest of this batch is dropped, and counted.
    const std::uint64_t lost = CountLines(std::string_view(batch).substr(done));
    fusebox::Locked lock(mu_);
    dropped_ += lost;
    return;
  }
}

}  // namespace fusebox::gateway
