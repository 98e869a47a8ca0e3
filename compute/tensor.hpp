// Tensor: a shape, a device and a shared, immutable-once-shared fp32 buffer (NCHW).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace petra {

using shape_t = std::vector<int64_t>;

enum class device_type { cpu, cuda, sim };

/// Where a tensor's bytes live: "cpu", "cuda:N", or "sim:N" (a simulated device for tests:
/// compute/sim/).
struct device {
  device_type type = device_type::cpu;
  int index = 0;

  std::string str() const;
  /// Parses "cpu", "cuda:N" or "sim:N"; throws std::invalid_argument naming the text otherwise.
  static device parse(const std::string& text);
  bool operator==(const device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const device& other) const { return !(*this == other); }
};

/// Owns one allocation on one device; freed by its deleter when the last handle goes. A backend
/// whose memory needs more than a deleter (stream-ordered frees, hand-over events) derives from it.
class storage {
 public:
  storage(void* data, std::size_t bytes, device where, std::function<void(void*)> deleter);
  virtual ~storage();
  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  device where() const { return where_; }

  /// Counts the writable accesses to these bytes (tensor::data() on a non-const handle): a copy made
  /// of them at write version v (a backend's converted weights) is current while this is still v.
  uint64_t write_version() const { return write_version_.load(std::memory_order_acquire); }
  void note_write() { write_version_.fetch_add(1, std::memory_order_acq_rel); }

  /// 64-byte aligned host memory, uninitialised.
  static std::shared_ptr<storage> allocate_host(std::size_t bytes);

 private:
  void* data_;
  std::size_t bytes_;
  device where_;
  std::function<void(void*)> deleter_;
  std::atomic<uint64_t> write_version_{0};
};

/// A handle: copying it shares the buffer. By convention a tensor that has been
/// handed to someone else (a message, a FIFO, a tape) is never written again.
class tensor {
 public:
  tensor() = default;
  tensor(shape_t shape, std::shared_ptr<storage> buffer, std::size_t offset_floats = 0);

  /// Uninitialised host tensor.
  static tensor empty(const shape_t& shape);
  /// Host tensor of zeros.
  static tensor zeros(const shape_t& shape);
  /// Host tensor holding `values` (values.size() must equal the shape's product).
  static tensor from_vector(const shape_t& shape, const std::vector<float>& values);

  bool defined() const { return buffer_ != nullptr; }
  const shape_t& shape() const { return shape_; }
  int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t rank() const { return shape_.size(); }
  int64_t numel() const;
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * sizeof(float); }
  device where() const;

  /// The first float, for host and GPU tensors; throws for a `sim:N` tensor, whose values only
  /// its backend may read (a hand-over to the host is missing: docs/design.md §5). The writable one
  /// advances the buffer's write version, so a pointer from it is for writes made before the next op
  /// reads the tensor: write after an op through a fresh data(), never a pointer kept from before it.
  float* data();
  const float* data() const;
  /// Where the tensor starts in its buffer, in floats.
  std::size_t offset() const { return offset_; }

  /// Deep copy on the host (only for host tensors).
  tensor clone() const;
  /// The host values as a vector (host tensors only).
  std::vector<float> to_vector() const;
  /// The same buffer seen with another shape of equal element count.
  tensor reshaped(const shape_t& shape) const;
  /// True when both handles share one allocation.
  bool shares_storage_with(const tensor& other) const { return buffer_ && buffer_ == other.buffer_; }
  const std::shared_ptr<storage>& buffer() const { return buffer_; }

  std::string shape_str() const;

 private:
  shape_t shape_;
  std::shared_ptr<storage> buffer_;
  std::size_t offset_ = 0;  // in floats
};

int64_t numel_of(const shape_t& shape);
std::string to_string(const shape_t& shape);

}  // namespace petra
