// apps/vpic-sim/embedded_files.h
//
// The recorded vPIC responses under apps/vpic-sim/data/, compiled into the binary by
// cmake/embed_files.cmake, so an installed vpic-sim needs no data directory.
//
// Thread safety: the table is immutable; EmbeddedFiles() may be called from any thread, also
// during static initialization.
//
// Example:
//   for (const EmbeddedFile& f : EmbeddedFiles()) {
//     fmt::print("{} ({} bytes)\n", f.path, f.bytes.size());
//   }
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace fusebox::vpic_sim {

struct EmbeddedFile {
  std::string_view path;   // relative to apps/vpic-sim/data, '/'-separated
  std::string_view bytes;  // the file's exact contents
};

// Every embedded file, sorted by path.
std::span<const EmbeddedFile> EmbeddedFiles();

}  // namespace fusebox::vpic_sim
