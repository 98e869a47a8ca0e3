// The convolution engine's converted weights (fp32 OIHW → a primitive's bf16 or blocked layout),
// kept between calls: weights change only when written, and every write advances their buffer's
// write version (tensor::data()), so a copy is used only while the version it was made at is current.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "compute/tensor.hpp"

namespace petra {

/// Converted copies of weight tensors, one per (tensor, layout). Not thread-safe: its engine's.
class weight_cache {
 public:
  /// Makes `copy` (in `layout`, on `eng`) hold `weights` converted.
  using convert_fn = std::function<void(const dnnl::memory& copy)>;

  /// The copy of `weights` in `layout`: the one made earlier when its buffer has not been written
  /// since, else a fresh one made by `convert`.
  const dnnl::memory& find(const tensor& weights, const dnnl::memory::desc& layout, const dnnl::engine& eng,
                           const convert_fn& convert);

  /// Conversions made (misses) and copies reused (hits) since construction.
  int64_t conversions() const { return conversions_; }
  int64_t reuses() const { return reuses_; }
  std::size_t copies() const { return entries_.size(); }

 private:
  struct entry {
    // The buffer the copy was made from. Held weakly, it keeps its control block: a later buffer at
    // the same address is another owner, never mistaken for this one.
    std::weak_ptr<storage> owner;
    const float* values = nullptr;  // where in the buffer (a view may start inside it)
    uint64_t version = 0;           // the buffer's write version the copy was made at
    dnnl::memory::desc layout;
    tensor bytes;  // the copy's memory
    dnnl::memory copy;
  };

  std::vector<entry> entries_;
  int64_t conversions_ = 0;
  int64_t reuses_ = 0;
};

}  // namespace petra
