// SIGHUP's reload reader: reads run on its own thread, requests during a read coalesce into one
// more read, and Stop() never waits for a read in progress. Reads are held at a gate the test
// opens, so nothing here depends on timing.
#include "config/reload_reader.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fusebox/thread_annotations.h"

namespace {

using fusebox::gateway::CommandLine;
using fusebox::gateway::ReloadReader;

// What the reads and deliveries of one test share. Held by shared_ptr: a read left running by
// Stop() may outlive the test's frame.
struct Probe {
  fusebox::Mutex mu;
  std::condition_variable_any changed;
  bool gate_open FUSEBOX_GUARDED_BY(mu) = false;  // reads wait here until the test opens it
  int reads_started FUSEBOX_GUARDED_BY(mu) = 0;
  int reads_finished FUSEBOX_GUARDED_BY(mu) = 0;
  std::vector<std::string> delivered FUSEBOX_GUARDED_BY(mu);  // each delivery's config_path
  std::thread::id read_thread FUSEBOX_GUARDED_BY(mu);

  // Waits until `done()` holds; `done` runs under mu (so it is FUSEBOX_REQUIRES(mu)).
  template <typename Done>
  void Await(Done done) {
    const fusebox::Locked lock(mu);
    changed.wait(mu, done);
  }
  void OpenGate() {
    {
      const fusebox::Locked lock(mu);
      gate_open = true;
    }
    changed.notify_all();
  }
};

ReloadReader MakeReader(const std::shared_ptr<Probe>& probe) {
  return ReloadReader(
      [probe]() -> ReloadReader::Reread {
        const fusebox::Locked lock(probe->mu);
        const int n = ++probe->reads_started;
        probe->read_thread = std::this_thread::get_id();
        probe->changed.notify_all();
        probe->changed.wait(probe->mu,
                            [&]() FUSEBOX_REQUIRES(probe->mu) { return probe->gate_open; });
        ++probe->reads_finished;
        probe->changed.notify_all();
        CommandLine line;
        line.config_path = "read " + std::to_string(n);
        return line;
      },
      [probe](ReloadReader::Reread reread) {
        const fusebox::Locked lock(probe->mu);
        probe->delivered.push_back(reread ? reread->config_path : reread.error().message);
        probe->changed.notify_all();
      });
}

TEST(ReloadReaderTest, ReadsOnItsOwnThreadAndDeliversTheResult) {
  auto probe = std::make_shared<Probe>();
  probe->OpenGate();
  ReloadReader reader = MakeReader(probe);
  reader.Request();
  probe->Await([&]() FUSEBOX_REQUIRES(probe->mu) { return probe->delivered.size() == 1; });
  reader.Stop();
  const fusebox::Locked lock(probe->mu);
  EXPECT_EQ(probe->delivered, std::vector<std::string>{"read 1"});
  EXPECT_NE(probe->read_thread, std::this_thread::get_id());
}

TEST(ReloadReaderTest, RequestsDuringAReadMakeOneMoreReadNotAQueue) {
  auto probe = std::make_shared<Probe>();
  ReloadReader reader = MakeReader(probe);
  reader.Request();
  probe->Await([&]() FUSEBOX_REQUIRES(probe->mu) { return probe->reads_started == 1; });
  // Three more signals while the first read is held.
  reader.Request();
  reader.Request();
  reader.Request();
  probe->OpenGate();
  probe->Await([&]() FUSEBOX_REQUIRES(probe->mu) { return probe->delivered.size() == 2; });
  reader.Stop();  // idle: joins, so no read can start after this
  const fusebox::Locked lock(probe->mu);
  EXPECT_EQ(probe->reads_started, 2);
  EXPECT_EQ(probe->delivered, (std::vector<std::string>{"read 1", "read 2"}));
}

TEST(ReloadReaderTest, StopDoesNotWaitForAReadInProgressAndDropsItsResult) {
  auto probe = std::make_shared<Probe>();
  ReloadReader reader = MakeReader(probe);
  reader.Request();
  probe->Await([&]() FUSEBOX_REQUIRES(probe->mu) { return probe->reads_started == 1; });
  reader.Stop();  // the read is still held at the gate: waiting for it would hang here
  probe->OpenGate();
  probe->Await([&]() FUSEBOX_REQUIRES(probe->mu) { return probe->reads_finished == 1; });
  // The reader's thread now finds itself stopped; it delivers nothing, then or later (its
  // deliver function is gone).
  reader.Request();
  const fusebox::Locked lock(probe->mu);
  EXPECT_TRUE(probe->delivered.empty());
  EXPECT_EQ(probe->reads_started, 1);
}

TEST(ReloadReaderTest, AReadThatThrowsIsARefusalNotACrash) {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<std::string> delivered;
  ReloadReader reader([]() -> ReloadReader::Reread { throw std::bad_alloc(); },
                      [&](ReloadReader::Reread reread) {
                        const std::lock_guard lock(mu);
                        delivered.push_back(reread ? "config" : reread.error().message);
                        changed.notify_all();
                      });
  reader.Request();
  {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return !delivered.empty(); });
  }
  reader.Stop();
  EXPECT_EQ(delivered, std::vector<std::string>{"--config: cannot be re-read: std::bad_alloc"});
}

}  // namespace
