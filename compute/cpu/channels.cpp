// Channel halves: split (N,2C,H,W) into two (N,C,H,W) and concatenate them back.
#include <cstring>

#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

std::pair<tensor, tensor> cpu_backend::split_channels_impl(const tensor& x) {
  const shape_t half_shape{x.dim(0), x.dim(1) / 2, x.dim(2), x.dim(3)};
  tensor first = output(half_shape), second = output(half_shape);
  const int64_t n = x.dim(0);
  const std::size_t half = static_cast<std::size_t>(numel_of(half_shape) / (n ? n : 1)) * sizeof(float);
  const auto* in = reinterpret_cast<const char*>(x.data());
  auto* a = reinterpret_cast<char*>(first.data());
  auto* b = reinterpret_cast<char*>(second.data());
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(a + i * half, in + 2 * i * half, half);
    std::memcpy(b + i * half, in + (2 * i + 1) * half, half);
  }
  return {std::move(first), std::move(second)};
}

tensor cpu_backend::concat_channels_impl(const tensor& a, const tensor& b) {
  const int64_t n = a.dim(0);
  tensor y = output({n, 2 * a.dim(1), a.dim(2), a.dim(3)});
  const std::size_t half = static_cast<std::size_t>(a.dim(1) * a.dim(2) * a.dim(3)) * sizeof(float);
  const auto* first = reinterpret_cast<const char*>(a.data());
  const auto* second = reinterpret_cast<const char*>(b.data());
  auto* out = reinterpret_cast<char*>(y.data());
#pragma omp parallel for num_threads(cpu::team_for(y.numel(), threads_)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out + 2 * i * half, first + i * half, half);
    std::memcpy(out + (2 * i + 1) * half, second + i * half, half);
  }
  return y;
}

}  // namespace petra
