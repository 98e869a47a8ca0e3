// Reads a whole dataset file into memory, inflating it when it is gzip (magic bytes 1f 8b).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace petra::data {

/// The file's bytes, gunzipped when the file starts with 1f 8b whatever its name; a missing file,
/// a read error or a corrupt/truncated gzip stream is a dataset_error naming `path`.
std::vector<uint8_t> read_file_bytes(const std::string& path);

/// Whether `path` names an existing regular file (no exception).
bool file_exists(const std::string& path);

}  // namespace petra::data
