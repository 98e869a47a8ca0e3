// safetensors files (https://github.com/huggingface/safetensors): named fp32 host tensors
// plus string metadata, the on-disk format of petra's checkpoints.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "compute/tensor.hpp"

namespace petra {

/// A malformed or unreadable safetensors file; the message names the file and the problem.
struct safetensors_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using named_tensors = std::vector<std::pair<std::string, tensor>>;

/// A loaded file: tensors in the order their data appears in the file.
struct safetensors_file {
  std::string path;
  named_tensors tensors;
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`; throws safetensors_error naming it and the file when absent.
  const tensor& find(const std::string& name) const;
  bool contains(const std::string& name) const;
};

/// Writes `tensors` (host fp32, unique names, none called "__metadata__") and
/// `metadata` to `path` atomically (see write_file_atomically). Layout:
/// u64 little-endian N | N bytes of JSON header, space-padded to N % 8 == 0 |
/// raw little-endian data, tensors back to back in the given order.
void save_safetensors(const std::string& path, const named_tensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a whole file; every tensor gets its own host buffer.
safetensors_file load_safetensors(const std::string& path);

/// Largest header accepted by load_safetensors (the reference implementation's limit).
inline constexpr std::uint64_t max_safetensors_header_bytes = 100'000'000;

}  // namespace petra
