// vin-gateway/service/key_filter.h
//
// A counting Bloom filter of the keys a cache holds: "certainly absent" or "maybe present". The
// SQLite cache asks it before its B-tree lookup, so that a VIN it never stored (every request
// while the breaker is open and clients bring new VINs) costs a few memory reads instead of a
// SQLite statement (about a ninth of such a refusal's instructions).
//
// The guarantee the cache relies on: a key added and not removed since is always "maybe present"
// (no false negatives), whatever else was added or removed. A key never added is "maybe present"
// with a small probability (about 3% at the capacity it was sized for, more beyond it): the
// caller then just does the lookup it would have done anyway.
//
// Why counting: the cache evicts, and a plain Bloom filter cannot forget, so under churn it would
// fill up and stop filtering. Each key sets kHashes 4-bit counters; removal decrements them. A
// counter that reaches 15 stays at 15 for good (it can no longer tell how many keys share it), so
// saturation only costs filtering, never correctness. Removing a key that was not added breaks the
// guarantee: the caller removes exactly the keys it deleted.
//
// Memory: kCellsPerKey 4-bit cells per key of capacity, i.e. 4 bytes per key (4 MB for the
// default one million entries); the capacity is capped at kMaxCapacity (64 MB of cells).
//
// Not thread-safe: the cache calls it under its own lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fusebox::gateway {

class KeyFilter {
 public:
  static constexpr std::uint64_t kCellsPerKey = 8;
  static constexpr std::uint64_t kMaxCapacity = std::uint64_t{16} << 20;  // 16 Mi keys
  static constexpr int kHashes = 3;

  // Sized for `capacity` keys (at least one, at most kMaxCapacity), empty.
  explicit KeyFilter(std::uint64_t capacity);

  // Whether `key` may have been added (and not removed since). False means certainly not.
  bool MayContain(std::string_view key) const noexcept;
  void Add(std::string_view key) noexcept;
  // Forgets one Add of `key`. Only for a key that was added.
  void Remove(std::string_view key) noexcept;
  // Forgets every key.
  void Clear() noexcept;

  std::size_t cells() const noexcept { return cells_; }
  std::size_t bytes() const noexcept { return nibbles_.size(); }

 private:
  // The kHashes cells of `key`.
  struct Cells {
    std::uint64_t at[kHashes];
  };
  Cells CellsOf(std::string_view key) const noexcept;
  unsigned Get(std::uint64_t cell) const noexcept;
  void Set(std::uint64_t cell, unsigned value) noexcept;

  std::uint64_t cells_;
  std::vector<std::uint8_t> nibbles_;  // two 4-bit counters per byte
};

}  // namespace fusebox::gateway
