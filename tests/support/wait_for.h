// Polls `condition` every 5 ms until it holds or `timeout` passes: for the integration tests
// that wait on a real server or another thread (unit tests use an injected clock instead).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace fusebox::testing {

template <typename Rep, typename Period>
bool WaitFor(const std::function<bool()>& condition, std::chrono::duration<Rep, Period> timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace fusebox::testing
