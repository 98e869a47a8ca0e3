// Pooling on the GPU: 2×2 stride-2 max pool (first maximum, as the CPU twin) and global average
// pool, by our kernels (cuDNN's max pool may break ties differently).
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

namespace {}  // namespace

tensor cuda_backend::max_pool2x2_forward_impl(const tensor& x) {
  enter();
  tensor y = output({x.dim(0), x.dim(1), x.dim(2) / 2, x.dim(3) / 2});
  cuda::kernels::max_pool2x2_forward(x.data(), y.data(), x.dim(0) * x.dim(1), x.dim(2), x.dim(3), stream());
  return y;
}

tensor cuda_backend::max_pool2x2_backward_impl(const tensor& x, const tensor& dy) {
  enter();
  tensor dx = output(x.shape());
  cuda::kernels::max_pool2x2_backward(x.data(), dy.data(), dx.data(), x.dim(0) * x.dim(1), x.dim(2), x.dim(3),
                                      stream());
  return dx;
}

tensor cuda_backend::max_pool2x2_jvp_impl(const tensor& x, const tensor& x_dot) {
  enter();
  tensor y_dot = output({x.dim(0), x.dim(1), x.dim(2) / 2, x.dim(3) / 2});
  cuda::kernels::max_pool2x2_jvp(x.data(), x_dot.data(), y_dot.data(), x.dim(0) * x.dim(1), x.dim(2),
                                 x.dim(3), stream());
  return y_dot;
}

tensor cuda_backend::global_avg_pool_forward_impl(const tensor& x) {
  const int64_t area = x.dim(2) * x.dim(3);
  enter();
  tensor y = output({x.dim(0), x.dim(1)});
  cuda::kernels::global_avg_pool_forward(x.data(), y.data(), x.dim(0) * x.dim(1), area, stream());
  return y;
}

tensor cuda_backend::global_avg_pool_backward_impl(const tensor& dy, const shape_t& x_shape) {
  const int64_t area = x_shape[2] * x_shape[3];
  enter();
  tensor dx = output(x_shape);
  cuda::kernels::global_avg_pool_backward(dy.data(), dx.data(), x_shape[0] * x_shape[1], area, stream());
  return dx;
}

}  // namespace petra
