#include "config/reload_reader.h"

#include <pthread.h>
#include <csignal>

#include <condition_variable>
#include <exception>
#include <utility>

#include <fmt/format.h>

#include "fusebox/thread_annotations.h"

namespace fusebox::gateway {

struct ReloadReader::State {
  State(std::function<Reread()> read_fn, std::function<void(Reread)> deliver_fn)
      : read(std::move(read_fn)), deliver(std::move(deliver_fn)) {}

  const std::function<Reread()> read;  // called on the thread only, outside the lock
  fusebox::Mutex mu;
  std::condition_variable_any wake;
  std::function<void(Reread)> deliver FUSEBOX_GUARDED_BY(mu);  // Emptied by Stop().
  bool requested FUSEBOX_GUARDED_BY(mu) = false;               // A read is wanted.
  bool reading FUSEBOX_GUARDED_BY(mu) = false;                 // `read` is running.
  bool stopping FUSEBOX_GUARDED_BY(mu) = false;
};

namespace {

// `read`'s result; what it throws (std::bad_alloc) refuses this reload instead of ending the
// process from a thread nobody catches on.
ReloadReader::Reread ReadOnce(const std::function<ReloadReader::Reread()>& read) {
  try {
    return read();
  } catch (const std::exception& e) {
    return ConfigError{"--config", fmt::format("--config: cannot be re-read: {}", e.what())};
  }
}

// Signals are the serving thread's business (SIGHUP asks for this very read, SIGTERM stops the
// process there); a reader stuck in a slow read must not be picked to run their handlers, and its
// reads must not be cut short by them.
void BlockAllSignals() {
  sigset_t all;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

}  // namespace

ReloadReader::ReloadReader(std::function<Reread()> read, std::function<void(Reread)> deliver)
    : state_(std::make_shared<State>(std::move(read), std::move(deliver))),
      thread_([state = state_] {
        BlockAllSignals();
        Loop(state);
      }) {}

ReloadReader::~ReloadReader() { Stop(); }

void ReloadReader::Request() {
  {
    const fusebox::Locked lock(state_->mu);
    // A flag, not a count: requests during a read make one more read, not a queue of them.
    state_->requested = true;
  }
  state_->wake.notify_one();
}

void ReloadReader::Stop() {
  bool reading = false;
  {
    const fusebox::Locked lock(state_->mu);
    state_->stopping = true;
    // Delivered under the lock (Loop): once this is empty, nothing is delivered any more.
    state_->deliver = nullptr;
    reading = state_->reading;
  }
  state_->wake.notify_one();
  if (!thread_.joinable()) {
    return;
  }
  // Idle, the thread sees `stopping` at once and ends: join it. Reading, it may be stuck in the
  // kernel (a hung mount) for as long as it likes; shutdown does not wait for it, and its result
  // is dropped when the read returns.
  if (reading) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void ReloadReader::Loop(const std::shared_ptr<State>& state) {
  const fusebox::Locked lock(state->mu);
  for (;;) {
    state->wake.wait(state->mu, [&]() FUSEBOX_REQUIRES(state->mu) {
      return state->requested || state->stopping;
    });
    if (state->stopping) {
      return;
    }
    state->requested = false;
    state->reading = true;
    state->mu.unlock();
    Reread reread = ReadOnce(state->read);
    state->mu.lock();
    state->reading = false;
    if (state->stopping) {
      return;
    }
    // Under the lock, so that Stop() cannot return while a delivery is under way; `deliver` only
    // hands the result on (a post to the event loop), it never waits.
    state->deliver(std::move(reread));
  }
}

}  // namespace fusebox::gateway
