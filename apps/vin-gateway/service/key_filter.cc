#include "service/key_filter.h"

#include <algorithm>
#include <functional>

namespace fusebox::gateway {
namespace {

constexpr unsigned kSaturated = 15;

// A cell index in [0, n) from 32 hash bits, by multiplication instead of a division (Lemire's
// "fast range"): the cell count need not be a power of two.
std::uint64_t Range(std::uint64_t bits32, std::uint64_t n) noexcept { return (bits32 * n) >> 32; }

}  // namespace

KeyFilter::KeyFilter(std::uint64_t capacity)
    : cells_(std::clamp<std::uint64_t>(capacity, 1, kMaxCapacity) * kCellsPerKey),
      nibbles_((cells_ + 1) / 2, 0) {}

KeyFilter::Cells KeyFilter::CellsOf(std::string_view key) const noexcept {
  // libstdc++'s string hash (64-bit MurmurHash2). Its 64 bits give two 32-bit hashes, combined
  // into kHashes indexes (Kirsch and Mitzenmacher: as good as independent hashes for a Bloom
  // filter).
  const std::uint64_t h = std::hash<std::string_view>{}(key);
  const std::uint64_t h1 = h & 0xffffffffU;
  const std::uint64_t h2 = (h >> 32) | 1U;
  Cells c{};
  for (int i = 0; i < kHashes; ++i) {
    c.at[i] = Range((h1 + static_cast<std::uint64_t>(i) * h2) & 0xffffffffU, cells_);
  }
  return c;
}

unsigned KeyFilter::Get(std::uint64_t cell) const noexcept {
  const std::uint8_t byte = nibbles_[cell / 2];
  return (cell % 2 == 0) ? (byte & 0x0fU) : (byte >> 4U);
}

void KeyFilter::Set(std::uint64_t cell, unsigned value) noexcept {
  std::uint8_t& byte = nibbles_[cell / 2];
  if (cell % 2 == 0) {
    byte = static_cast<std::uint8_t>((byte & 0xf0U) | value);
  } else {
    byte = static_cast<std::uint8_t>((byte & 0x0fU) | (value << 4U));
  }
}

bool KeyFilter::MayContain(std::string_view key) const noexcept {
  const Cells c = CellsOf(key);
  return std::all_of(std::begin(c.at), std::end(c.at),
                     [this](std::uint64_t cell) { return Get(cell) != 0; });
}

void KeyFilter::Add(std::string_view key) noexcept {
  for (const std::uint64_t cell : CellsOf(key).at) {
    if (const unsigned v = Get(cell); v < kSaturated) {
      Set(cell, v + 1);
    }
  }
}

void KeyFilter::Remove(std::string_view key) noexcept {
  for (const std::uint64_t cell : CellsOf(key).at) {
    // A saturated cell no longer knows its count; an empty one means the caller removed a key
    // it never added (left as is rather than wrapped around).
    if (const unsigned v = Get(cell); v != 0 && v < kSaturated) {
      Set(cell, v - 1);
    }
  }
}

void KeyFilter::Clear() noexcept { std::fill(nibbles_.begin(), nibbles_.end(), 0); }

}  // namespace fusebox::gateway
