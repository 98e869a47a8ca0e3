// Channel halves on the GPU: each image's block of C·H·W floats is one row of a 2-D copy.
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"

namespace petra {

std::pair<tensor, tensor> cuda_backend::split_channels_impl(const tensor& x) {
  enter();
  const shape_t half_shape{x.dim(0), x.dim(1) / 2, x.dim(2), x.dim(3)};
  tensor first = output(half_shape), second = output(half_shape);
  const std::size_t half =
      static_cast<std::size_t>(half_shape[1] * half_shape[2] * half_shape[3]) * sizeof(float);
  const auto rows = static_cast<std::size_t>(x.dim(0));
  if (half && rows) {
    const char* in = reinterpret_cast<const char*>(x.data());
    PETRA_CUDA_CHECK(
        cudaMemcpy2DAsync(first.data(), half, in, 2 * half, half, rows, cudaMemcpyDeviceToDevice, stream()));
    PETRA_CUDA_CHECK(cudaMemcpy2DAsync(second.data(), half, in + half, 2 * half, half, rows,
                                       cudaMemcpyDeviceToDevice, stream()));
  }
  return {std::move(first), std::move(second)};
}

tensor cuda_backend::concat_channels_impl(const tensor& a, const tensor& b) {
  enter();
  tensor y = output({a.dim(0), 2 * a.dim(1), a.dim(2), a.dim(3)});
  const std::size_t half = static_cast<std::size_t>(a.dim(1) * a.dim(2) * a.dim(3)) * sizeof(float);
  const auto rows = static_cast<std::size_t>(a.dim(0));
  if (half && rows) {
    char* out = reinterpret_cast<char*>(y.data());
    PETRA_CUDA_CHECK(
        cudaMemcpy2DAsync(out, 2 * half, a.data(), half, half, rows, cudaMemcpyDeviceToDevice, stream()));
    PETRA_CUDA_CHECK(cudaMemcpy2DAsync(out + half, 2 * half, b.data(), half, half, rows,
                                       cudaMemcpyDeviceToDevice, stream()));
  }
  return y;
}

}  // namespace petra
