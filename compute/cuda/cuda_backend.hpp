// The CUDA backend: cuDNN (legacy API), cuBLAS and kernels of our own. Declared here for the
// backend factory; defined in compute/cuda/*.cpp and *.cu.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/conv_algorithms.hpp"

namespace petra {

/// True when a CUDA device can be used; otherwise `why` holds the runtime's reason.
bool cuda_available(std::string* why);

/// A backend on GPU `device_index`, with its own stream and cuDNN/cuBLAS handles; `precision` as
/// compute/precision.hpp says (bf16 and bf16_emulated alike: operands rounded on the GPU, fp32 math);
/// convolution algorithms by `search`, a choice of `recorded` first (compute/conv_algorithms.hpp).
std::unique_ptr<backend> make_cuda_backend(int device_index, math_precision precision, bool deterministic,
                                           conv_search search = conv_search::automatic,
                                           std::shared_ptr<const conv_algorithm_table> recorded = nullptr);

/// Every choice of this process's CUDA backends whose search resolved to `search` and whose
/// recorded table is `recorded` (compared by path; null: none), each key once, in the order chosen.
std::vector<conv_algorithm_record> cuda_conv_algorithm_choices(conv_search search,
                                                               const conv_algorithm_table* recorded);

/// Pinned host tensors from a pool of their own (at most `max_idle_bytes` of freed blocks kept);
/// thread-safe. Needs a usable GPU (cuda_available).
std::function<tensor(const shape_t&)> make_pinned_host_tensors(std::size_t max_idle_bytes);

/// Bytes of GPU `device_index`'s memory pool held now by every backend's live tensors (memory
/// whose free is queued counts until the free has run: synchronize first).
std::size_t cuda_pool_bytes_in_use(int device_index);

}  // namespace petra
