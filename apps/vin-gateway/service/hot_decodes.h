// HotDecodes: a small in-process LRU of parsed decodes in front of the Cache backend.
//
// Why: without it every cached answer costs a backend read (an SQLite query by default) and a
// JSON parse of the stored decode, and the VINs people ask for repeat. Entries are immutable
// decodes shared by pointer; whether one is fresh is judged by the caller from its fetched_at,
// exactly as for a backend entry, so the front never changes what is served, only how fast.
// Bounded by entry count (least recently used out first); capacity 0 disables it.
//
// Next to a decode the front can keep the JSON body of a fresh hit on it (AttachFreshBody):
// that body is the same bytes for every fresh hit of one stored decode, so it is rendered once
// instead of per request. It belongs to that decode: replacing the decode drops it.
//
// Thread-safe: one mutex around a hash map and a list (critical sections are a few pointer
// moves; nothing is allocated under the lock on a hit).
//
// Example:
//   HotDecodes hot(4096);
//   hot.Put(key, decode);
//   if (DecodePtr d = hot.Get(key)) { ... }
//   hot.AttachFreshBody(key, d, std::make_shared<const std::string>(body));
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/decode.h"
#include "fusebox/thread_annotations.h"

namespace fusebox::gateway {

class HotDecodes {
 public:
  explicit HotDecodes(std::size_t capacity) : capacity_(capacity) {}

  using BodyPtr = std::shared_ptr<const std::string>;
  struct Entry {
    DecodePtr decode;    // null: not in the front
    BodyPtr fresh_body;  // null until attached
  };

  // The entry stored under `key` (a null decode when none); a hit becomes the most recently used.
  Entry Lookup(const std::string& key);
  DecodePtr Get(const std::string& key) { return Lookup(key).decode; }
  // Stores (or replaces) the decode under `key`; evicts the least recently used beyond capacity.
  void Put(const std::string& key, DecodePtr decode);
  // Keeps `body` as the fresh-hit body of `key` if `decode` is still the decode stored there.
  void AttachFreshBody(const std::string& key, const DecodePtr& decode, BodyPtr body);

  std::size_t size() const;
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  using Order = std::list<std::pair<std::string, Entry>>;  // most recently used first

  mutable fusebox::Mutex mu_;
  const std::size_t capacity_;
  Order order_ FUSEBOX_GUARDED_BY(mu_);
  std::unordered_map<std::string, Order::iterator> index_ FUSEBOX_GUARDED_BY(mu_);
};

}  // namespace fusebox::gateway
