// LogWriter (apps/vin-gateway/http/log_writer.h): lines in order and all of them while the output
// takes them; never a blocked Write() when it does not (a pipe nobody reads, a closed pipe).
#include "http/log_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace fusebox::gateway {
namespace {

struct Pipe {
  Pipe() {
    std::array<int, 2> fds{};
    EXPECT_EQ(::pipe(fds.data()), 0);
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    CloseRead();
    if (write_end >= 0) {
      ::close(write_end);
    }
  }
  void CloseRead() {
    if (read_end >= 0) {
      ::close(read_end);
      read_end = -1;
    }
  }
  // Everything readable now (the write end stays open: reads until the pipe is empty).
  std::string Drain() const {
    const int flags = ::fcntl(read_end, F_GETFL);
    ::fcntl(read_end, F_SETFL, flags | O_NONBLOCK);
    std::string out;
    std::array<char, 65536> buffer{};
    for (;;) {
      const ssize_t n = ::read(read_end, buffer.data(), buffer.size());
      if (n <= 0) {
        break;
      }
      out.append(buffer.data(), static_cast<std::size_t>(n));
    }
    ::fcntl(read_end, F_SETFL, flags);
    return out;
  }
  int read_end = -1;
  int write_end = -1;
};

TEST(LogWriterTest, WritesEveryLineInOrderByFlush) {
  Pipe pipe;
  std::string expected;
  {
    LogWriter writer(pipe.write_end);
    for (int i = 0; i < 1000; ++i) {
      const std::string line = "line " + std::to_string(i);
      writer.Write(line);
      expected += line + "\n";
    }
    writer.Flush();
    EXPECT_EQ(pipe.Drain(), expected);
    EXPECT_EQ(writer.dropped(), 0U);
    writer.Write("last");
  }  // the destructor flushes
  EXPECT_EQ(pipe.Drain(), "last\n");
}

TEST(LogWriterTest, OnALoopThreadTheLaterLinesOfATurnAreWrittenAtItsEnd) {
  Pipe pipe;
  LogWriter writer(pipe.write_end);
  boost::asio::io_context io(1);
  writer.GatherPerTurn(io);
  std::string seen_after_first = "unset";
  std::string seen_after_third = "unset";
  boost::asio::post(io, [&] {
    writer.Write("a");
    seen_after_first = pipe.Drain();  // the first line of a turn: at once
    writer.Write("b");
    writer.Write("c");
    seen_after_third = pipe.Drain();  // the later ones: gathered
  });
  io.run();
  EXPECT_EQ(seen_after_first, "a\n");
  EXPECT_EQ(seen_after_third, "");
  EXPECT_EQ(pipe.Drain(), "b\nc\n");  // written when the turn ended, before run() returned
  writer.Write("after the loop");     // the loop has stopped: written at once
  EXPECT_EQ(pipe.Drain(), "after the loop\n");
}

TEST(LogWriterTest, AnOutputThatTakesNothingNeverBlocksWriteAndDropsAreReported) {
  Pipe pipe;  // nobody reads until the end: the pipe (64 KiB) fills, then the writer waits
  const std::string line(100, 'x');
  LogWriter writer(pipe.write_end, {.max_pending_bytes = std::size_t{16} * 1024,
                                    .dropped_line = [](std::uint64_t count) {
                                      return "dropped " + std::to_string(count);
                                    }});
  const auto start = std::chrono::steady_clock::now();
  constexpr int kLines = 20000;  // 2 MB: far more than the pipe and the buffer hold
  for (int i = 0; i < kLines; ++i) {
    writer.Write(line);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_GT(writer.dropped(), 0U);
  // The reader comes back: what was kept arrives, and lines that count the drops.
  std::string got;
  std::thread reader([&] {
    for (int idle = 0; idle < 200; ++idle) {
      const std::string chunk = pipe.Drain();
      got += chunk;
      if (chunk.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      } else {
        idle = 0;
      }
    }
  });
  writer.Flush();
  writer.Write("after");
  writer.Flush();
  reader.join();
  const std::uint64_t dropped = writer.dropped();
  std::uint64_t kept = 0;
  for (std::size_t at = got.find(line + "\n"); at != std::string::npos;
       at = got.find(line + "\n", at + 1)) {
    ++kept;
  }
  EXPECT_EQ(kept + dropped, static_cast<std::uint64_t>(kLines));
  // Every drop is reported (in one line or several, as the output came back).
  std::uint64_t reported = 0;
  for (std::size_t at = got.find("dropped "); at != std::string::npos;
       at = got.find("dropped ", at + 1)) {
    reported += std::stoull(got.substr(at + 8, got.find('\n', at) - at - 8));
  }
  EXPECT_EQ(reported, dropped);
  EXPECT_TRUE(got.ends_with("after\n"));
}

TEST(LogWriterTest, AClosedOutputNeverBlocksAndCountsItsLines) {
  Pipe pipe;
  pipe.CloseRead();  // EPIPE (SIGPIPE is ignored by the gateway, and here)
  const auto old = std::signal(SIGPIPE, SIG_IGN);
  {
    LogWriter writer(pipe.write_end);
    for (int i = 0; i < 100; ++i) {
      writer.Write("lost");
    }
    writer.Flush();
    EXPECT_EQ(writer.dropped(), 100U);
  }
  std::signal(SIGPIPE, old);
}

// A writer made where an earlier one was (the same address), on a thread that gathered lines
// for the earlier one, must not take the earlier writer's turn: that turn's io_context may be
// gone (it was, and the gateway's test binary crashed, when a turn named its writer by address).
// Here the io_context stays, so that taking the turn shows: a flush posted to it.
TEST(LogWriterTest, AWriterAtAnEarlierWritersAddressDoesNotTakeItsTurn) {
  Pipe pipe;
  boost::asio::io_context io;
  alignas(LogWriter) std::array<std::byte, sizeof(LogWriter)> storage{};
  auto* first = new (storage.data()) LogWriter(pipe.write_end);
  first->GatherPerTurn(io);
  first->~LogWriter();
  auto* second = new (storage.data()) LogWriter(pipe.write_end);
  ASSERT_EQ(static_cast<void*>(second), static_cast<void*>(first));
  second->Write("second");
  second->Flush();
  second->~LogWriter();
  EXPECT_EQ(io.poll(), 0U);  // nothing was posted for a turn of `io`
  EXPECT_EQ(pipe.Drain(), "second\n");
}

}  // namespace
}  // namespace fusebox::gateway
