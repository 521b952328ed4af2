// internal/thread_annotations.h (not installed: the library's lock annotations)
//
// Clang's thread-safety analysis (-Wthread-safety) checks what the annotations below state:
// a field GUARDED_BY a lock is touched only with that lock held, a function that REQUIRES it is
// called only with it held. scripts/check-thread-safety.sh runs the analysis over src/ in CI;
// under gcc the macros are empty. The locks they name are capabilities: SpinLock, Mutex, and the
// scoped holder Locked.
//
// Example:
//   Mutex mu;
//   int hits FUSEBOX_GUARDED_BY(mu) = 0;
//   void BumpLocked() FUSEBOX_REQUIRES(mu) { ++hits; }
//   { Locked lock(mu); BumpLocked(); }
#pragma once

#include <mutex>

#if defined(__clang__)
#define FUSEBOX_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FUSEBOX_THREAD_ANNOTATION(x)
#endif

#define FUSEBOX_CAPABILITY(name) FUSEBOX_THREAD_ANNOTATION(capability(name))
#define FUSEBOX_SCOPED_CAPABILITY FUSEBOX_THREAD_ANNOTATION(scoped_lockable)
#define FUSEBOX_GUARDED_BY(lock) FUSEBOX_THREAD_ANNOTATION(guarded_by(lock))
#define FUSEBOX_PT_GUARDED_BY(lock) FUSEBOX_THREAD_ANNOTATION(pt_guarded_by(lock))
#define FUSEBOX_REQUIRES(...) FUSEBOX_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define FUSEBOX_EXCLUDES(...) FUSEBOX_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define FUSEBOX_ACQUIRE(...) FUSEBOX_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define FUSEBOX_RELEASE(...) FUSEBOX_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define FUSEBOX_NO_THREAD_SAFETY_ANALYSIS FUSEBOX_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace fusebox::internal {

// std::mutex as a capability the analysis knows (libstdc++'s is not annotated).
class FUSEBOX_CAPABILITY("mutex") Mutex {
 public:
  void lock() FUSEBOX_ACQUIRE() { mu_.lock(); }
  void unlock() FUSEBOX_RELEASE() { mu_.unlock(); }
  // For std::condition_variable, which waits on the mutex itself.
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds `lock` for its scope, as std::lock_guard, in a way the analysis sees.
template <typename Lock>
class FUSEBOX_SCOPED_CAPABILITY Locked {
 public:
  explicit Locked(Lock& lock) FUSEBOX_ACQUIRE(lock) : lock_(lock) { lock_.lock(); }
  ~Locked() FUSEBOX_RELEASE() { lock_.unlock(); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  Lock& lock_;
};

}  // namespace fusebox::internal
