// Pooling on the GPU: 2×2 stride-2 max pool (first maximum, as the CPU twin) and global average
// pool, by our kernels (cuDNN's max pool may break ties differently).
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

namespace {

using cuda::fail;

void require_even_plane(const char* op, const tensor& x) {
  if (x.dim(2) % 2 || x.dim(3) % 2)
    fail(op, "x " + x.shape_str() + " has an odd height or width: a 2×2 stride-2 pool needs both even");
}

}  // namespace

tensor cuda_backend::max_pool2x2_forward(const tensor& x) {
  const char* op = "max_pool2x2_forward";
  require(op, "x", x, 4, "(N, C, H, W)");
  require_even_plane(op, x);
  enter();
  tensor y = output({x.dim(0), x.dim(1), x.dim(2) / 2, x.dim(3) / 2});
  cuda::kernels::max_pool2x2_forward(x.data(), y.data(), x.dim(0) * x.dim(1), x.dim(2), x.dim(3), stream());
  return y;
}

tensor cuda_backend::max_pool2x2_backward(const tensor& x, const tensor& dy) {
  const char* op = "max_pool2x2_backward";
  require(op, "x", x, 4, "(N, C, H, W)");
  require_even_plane(op, x);
  require(op, "dy", dy, 4, "(N, C, H/2, W/2)");
  if (dy.shape() != shape_t{x.dim(0), x.dim(1), x.dim(2) / 2, x.dim(3) / 2})
    fail(op, "dy " + dy.shape_str() + " is not the pooled shape of x " + x.shape_str());
  enter();
  tensor dx = output(x.shape());
  cuda::kernels::max_pool2x2_backward(x.data(), dy.data(), dx.data(), x.dim(0) * x.dim(1), x.dim(2), x.dim(3),
                                      stream());
  return dx;
}

tensor cuda_backend::global_avg_pool_forward(const tensor& x) {
  const char* op = "global_avg_pool_forward";
  require(op, "x", x, 4, "(N, C, H, W)");
  const int64_t area = x.dim(2) * x.dim(3);
  if (area < 1) fail(op, "x " + x.shape_str() + " has an empty plane: nothing to average");
  enter();
  tensor y = output({x.dim(0), x.dim(1)});
  cuda::kernels::global_avg_pool_forward(x.data(), y.data(), x.dim(0) * x.dim(1), area, stream());
  return y;
}

tensor cuda_backend::global_avg_pool_backward(const tensor& dy, const shape_t& x_shape) {
  const char* op = "global_avg_pool_backward";
  require(op, "dy", dy, 2, "(N, C)");
  if (x_shape.size() != 4 || dy.shape() != shape_t{x_shape[0], x_shape[1]})
    fail(op, "dy " + dy.shape_str() + " does not match x_shape " + to_string(x_shape) +
                 ": expected x (N, C, H, W) and dy (N, C)");
  const int64_t area = x_shape[2] * x_shape[3];
  if (area < 1) fail(op, "x_shape " + to_string(x_shape) + " has an empty plane");
  enter();
  tensor dx = output(x_shape);
  cuda::kernels::global_avg_pool_backward(dy.data(), dx.data(), x_shape[0] * x_shape[1], area, stream());
  return dx;
}

}  // namespace petra
