// fusebox/thread_annotations.h: lock annotations that clang's thread-safety analysis checks.
//
// A field FUSEBOX_GUARDED_BY(mu) is touched only with `mu` held; a function that
// FUSEBOX_REQUIRES(mu) is called only with it held. Under clang with -Wthread-safety these are
// checked at compile time; under other compilers the macros are empty. The library's own headers
// use them, and so may an application. libstdc++'s mutexes are not annotated, so the locks the
// analysis can see are these: Mutex, SharedMutex, and the scoped holders Locked and LockedShared.
//
// Example:
//   fusebox::Mutex mu;
//   int hits FUSEBOX_GUARDED_BY(mu) = 0;
//   void BumpLocked() FUSEBOX_REQUIRES(mu) { ++hits; }
//   { fusebox::Locked lock(mu); BumpLocked(); }
#pragma once

#include <mutex>
#include <shared_mutex>

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
#define FUSEBOX_REQUIRES_SHARED(...) \
  FUSEBOX_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define FUSEBOX_EXCLUDES(...) FUSEBOX_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define FUSEBOX_ACQUIRE(...) FUSEBOX_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define FUSEBOX_ACQUIRE_SHARED(...) \
  FUSEBOX_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define FUSEBOX_RELEASE(...) FUSEBOX_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define FUSEBOX_RELEASE_SHARED(...) \
  FUSEBOX_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define FUSEBOX_RELEASE_GENERIC(...) \
  FUSEBOX_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define FUSEBOX_NO_THREAD_SAFETY_ANALYSIS FUSEBOX_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace fusebox {

// std::mutex as a capability. BasicLockable, so std::condition_variable_any waits on it directly
// (the analysis then keeps seeing the lock held across the wait).
class FUSEBOX_CAPABILITY("mutex") Mutex {
 public:
  void lock() FUSEBOX_ACQUIRE() { mu_.lock(); }
  void unlock() FUSEBOX_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// std::shared_mutex as a capability: exclusive for writers, shared for readers.
class FUSEBOX_CAPABILITY("mutex") SharedMutex {
 public:
  void lock() FUSEBOX_ACQUIRE() { mu_.lock(); }
  void unlock() FUSEBOX_RELEASE() { mu_.unlock(); }
  void lock_shared() FUSEBOX_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() FUSEBOX_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds `lock` exclusively for its scope, as std::lock_guard, in a way the analysis sees.
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

// Holds `lock` shared for its scope, as std::shared_lock.
template <typename Lock>
class FUSEBOX_SCOPED_CAPABILITY LockedShared {
 public:
  explicit LockedShared(Lock& lock) FUSEBOX_ACQUIRE_SHARED(lock) : lock_(lock) {
    lock_.lock_shared();
  }
  ~LockedShared() FUSEBOX_RELEASE() { lock_.unlock_shared(); }
  LockedShared(const LockedShared&) = delete;
  LockedShared& operator=(const LockedShared&) = delete;

 private:
  Lock& lock_;
};

}  // namespace fusebox
