// Crash-safe file replacement: a file is either its old content or its complete new content.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace petra {

/// Writes `path` atomically: `fill` writes into a temp file beside `path`, which is
/// flushed, fsync'ed and renamed over `path`; then the directory is fsync'ed.
/// On any failure (an exception from `fill`, a stream left bad, a write or sync
/// error, a full disk) the temp file is removed, `path` keeps its old content (or
/// stays absent) and a std::runtime_error naming `path` is thrown (an exception from
/// `fill` is wrapped, its message kept).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& fill);

}  // namespace petra
