// Direct-loop reference convolution (double accumulation) for the conv tests.
#include "tests/ops/reference_conv.hpp"

namespace petra::test {

namespace {

/// Calls f(x index, w index, y index) for every product x[n,c,i,j]·w[k,c,r,s]
/// that contributes to y[n,k,p,q], skipping taps that fall in the padding.
template <typename F>
void for_each_tap(const shape_t& x, const shape_t& w, conv2d_params prm, F f) {
  const int64_t n_ = x[0], c_ = x[1], h = x[2], wd = x[3], k_ = w[0], r_ = w[2], s_ = w[3];
  const int64_t p_ = (h + 2 * prm.padding - r_) / prm.stride + 1,
                q_ = (wd + 2 * prm.padding - s_) / prm.stride + 1;
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t k = 0; k < k_; ++k)
      for (int64_t p = 0; p < p_; ++p)
        for (int64_t q = 0; q < q_; ++q)
          for (int64_t c = 0; c < c_; ++c)
            for (int64_t r = 0; r < r_; ++r)
              for (int64_t s = 0; s < s_; ++s) {
                const int64_t i = p * prm.stride - prm.padding + r, j = q * prm.stride - prm.padding + s;
                if (i < 0 || i >= h || j < 0 || j >= wd) continue;
                f(((n * c_ + c) * h + i) * wd + j, ((k * c_ + c) * r_ + r) * s_ + s,
                  ((n * k_ + k) * p_ + p) * q_ + q);
              }
}

}  // namespace

std::vector<double> reference_conv2d_forward(const tensor& x, const tensor& w, const tensor& b,
                                             conv2d_params p) {
  const int64_t n = x.dim(0), k = w.dim(0);
  const int64_t pq = ((x.dim(2) + 2 * p.padding - w.dim(2)) / p.stride + 1) *
                     ((x.dim(3) + 2 * p.padding - w.dim(3)) / p.stride + 1);
  std::vector<double> y(static_cast<std::size_t>(n * k * pq), 0.0);
  for_each_tap(x.shape(), w.shape(), p, [&](int64_t xi, int64_t wi, int64_t yi) {
    y[yi] += static_cast<double>(x.data()[xi]) * w.data()[wi];
  });
  if (b.defined())
    for (std::size_t yi = 0; yi < y.size(); ++yi) y[yi] += b.data()[(yi / pq) % k];
  return y;
}

std::vector<double> reference_conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                                   conv2d_params p) {
  std::vector<double> dx(static_cast<std::size_t>(numel_of(x_shape)), 0.0);
  for_each_tap(x_shape, w.shape(), p, [&](int64_t xi, int64_t wi, int64_t yi) {
    dx[xi] += static_cast<double>(dy.data()[yi]) * w.data()[wi];
  });
  return dx;
}

std::vector<double> reference_conv2d_backward_filter(const tensor& x, const tensor& dy, int64_t r, int64_t s,
                                                     conv2d_params p) {
  const shape_t w_shape{dy.dim(1), x.dim(1), r, s};
  std::vector<double> dw(static_cast<std::size_t>(numel_of(w_shape)), 0.0);
  for_each_tap(x.shape(), w_shape, p, [&](int64_t xi, int64_t wi, int64_t yi) {
    dw[wi] += static_cast<double>(x.data()[xi]) * dy.data()[yi];
  });
  return dw;
}

std::vector<double> reference_conv2d_backward_bias(const tensor& dy) {
  const int64_t k = dy.dim(1), pq = dy.dim(2) * dy.dim(3);
  std::vector<double> db(static_cast<std::size_t>(k), 0.0);
  for (int64_t i = 0; i < dy.numel(); ++i) db[(i / pq) % k] += dy.data()[i];
  return db;
}

}  // namespace petra::test
