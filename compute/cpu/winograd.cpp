// Winograd F(4×4, 3×3) and F(3×3, 4×4) on fp32 NCHW buffers (see winograd.hpp). Layouts inside:
// inputs copied once to padded NHWC (channels contiguous), transforms computed 16 channels at a
// time, and point ξ's products a row-major SGEMM of (tiles × in-channels) by (in × out-channels).
#include "compute/cpu/winograd.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

#include "compute/cpu/gemm.hpp"
#include "compute/cpu/nhwc.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra::cpu {

namespace {

using winograd_tables::alpha;
using winograd_tables::f34;
using winograd_tables::f43;
constexpr int points = 36;  // α²: the products per tile
constexpr int lanes = 16;   // channels per transform step (widths are whole blocks of 16)

/// Tiles per batch of products: 32,768 floats (128 KB) per point on the wider side, 4.5 MB for the
/// batch; smaller batches measured slower (the SGEMMs of few rows cost more than the cache saves).
int64_t tile_batch(int64_t tiles, int64_t width) {
  return std::min<int64_t>(tiles, std::max<int64_t>(16, 32768 / width));
}

/// The 4×4 output tiles of n planes of p × q, in order (image, tile row, tile column), and where a
/// tile starts in a channels-last grid.
struct tiling {
  int64_t n, p, q, th, tw, tiles;
  tiling(int64_t images, int64_t height, int64_t width)
      : n(images), p(height), q(width), th((p + 3) / 4), tw((q + 3) / 4), tiles(n * th * tw) {}
  /// Rows and columns of the padded input the tiles' 6×6 patches read.
  int64_t patch_rows() const { return 4 * th + 2; }
  int64_t patch_cols() const { return 4 * tw + 2; }
  int64_t image(int64_t t) const { return t / (th * tw); }
  int64_t row(int64_t t) const { return t % (th * tw) / tw; }
  int64_t col(int64_t t) const { return t % tw; }
  /// Offset of tile t's first element in an NHWC grid of `rows` × `cols` positions of c channels.
  int64_t origin(int64_t t, int64_t rows, int64_t cols, int64_t c) const {
    return ((image(t) * rows + 4 * row(t)) * cols + 4 * col(t)) * c;
  }
};

/// One separable 2-D transform of 16 lanes: out(i, j) = Σ_a Σ_b left[i][a] · in(a, b) · right[j][b]
/// (i < I, j < J, a < A, b < B; left I × A, right J × B, row-major), rows first. `in(a, b)` points at
/// 16 floats; `put(i, j, values)` takes 16. Inlined with the constant matrices, its unrolled loops
/// drop the zero coefficients.
template <int I, int J, int A, int B, class In, class Put>
[[gnu::always_inline]] inline void separable(const float* left, const float* right, In in, Put put) {
  float mid[A][J][lanes];  // Σ_b in(a, b) · right[j][b]
#pragma GCC unroll 6
  for (int a = 0; a < A; ++a)
#pragma GCC unroll 6
    for (int j = 0; j < J; ++j) {
      float acc[lanes] = {};
#pragma GCC unroll 6
      for (int b = 0; b < B; ++b) {
        const float f = right[j * B + b];
        if (f == 0.f) continue;
        const float* s = in(a, b);
        for (int l = 0; l < lanes; ++l) acc[l] += f * s[l];
      }
      std::memcpy(mid[a][j], acc, sizeof acc);
    }
#pragma GCC unroll 6
  for (int i = 0; i < I; ++i)
#pragma GCC unroll 6
    for (int j = 0; j < J; ++j) {
      float acc[lanes] = {};
#pragma GCC unroll 6
      for (int a = 0; a < A; ++a) {
        const float f = left[i * A + a];
        if (f == 0.f) continue;
        for (int l = 0; l < lanes; ++l) acc[l] += f * mid[a][j][l];
      }
      put(i, j, acc);
    }
}

/// The 36 points of one 6×6 patch (rows `row_stride` floats apart, channels contiguous): point ξ's
/// c channels at v + ξ·point_stride. Bᵀ d B, 16 channels at a time.
void patch_points(const float* patch, int64_t row_stride, int64_t c, float* v, int64_t point_stride) {
  for (int64_t c0 = 0; c0 < c; c0 += lanes)
    separable<alpha, alpha, alpha, alpha>(
        f43.bt, f43.bt, [&](int a, int b) { return patch + a * row_stride + b * c + c0; },
        [&](int i, int j, const float* values) {
          std::memcpy(v + (i * alpha + j) * point_stride + c0, values, sizeof(float) * lanes);
        });
}

/// The 36 points of one 4×4 tile of dy (rows `row_stride` floats apart, channels contiguous):
/// G₄ dy G₄ᵀ, 16 channels at a time.
void dy_points(const float* tile, int64_t row_stride, int64_t k, float* d, int64_t point_stride) {
  for (int64_t k0 = 0; k0 < k; k0 += lanes)
    separable<alpha, alpha, 4, 4>(
        f34.g, f34.g, [&](int a, int b) { return tile + a * row_stride + b * k + k0; },
        [&](int i, int j, const float* values) {
          std::memcpy(d + (i * alpha + j) * point_stride + k0, values, sizeof(float) * lanes);
        });
}

/// One tile's output: Aᵀ M A from the 36 products (point ξ's `cout` values at m + ξ·point_stride),
/// plus the bias, written into out (n, p, q, cout) at tile (b, ty, tx), cut at the plane's edge.
void tile_output(const float* m, int64_t point_stride, int64_t cout, const float* bias, float* out, int64_t b,
                 int64_t ty, int64_t tx, int64_t p, int64_t q) {
  const int64_t rows = std::min<int64_t>(4, p - 4 * ty), cols = std::min<int64_t>(4, q - 4 * tx);
  for (int64_t k0 = 0; k0 < cout; k0 += lanes)
    separable<4, 4, alpha, alpha>(
        f43.at, f43.at, [&](int i, int j) { return m + (i * alpha + j) * point_stride + k0; },
        [&](int aa, int bb, const float* values) {
          if (aa >= rows || bb >= cols) return;  // beyond the plane's edge
          float* o = out + ((b * p + 4 * ty + aa) * q + 4 * tx + bb) * cout + k0;
          for (int l = 0; l < lanes; ++l) o[l] = bias != nullptr ? values[l] + bias[k0 + l] : values[l];
        });
}

/// The filters' 36 points, point ξ a panel of in × out channels: u[ξ][row][col] = (G₃ f G₃ᵀ)ξ for
/// the 3×3 filter f of (row, col), whose tap (a, b) is w[row·row_stride + col·col_stride + tap(a, b)]
/// with tap = 3a + b, or 3(2 − a) + (2 − b) when `flipped`.
void filter_points(const float* w, int64_t in, int64_t out, int64_t row_stride, int64_t col_stride,
                   bool flipped, float* u, int threads) {
  const int team = team_for(in * out * points, threads);
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
  for (int64_t row = 0; row < in; ++row)
    for (int64_t col0 = 0; col0 < out; col0 += lanes) {
      float f[3][3][lanes];
#pragma GCC unroll 6
      for (int a = 0; a < 3; ++a)
#pragma GCC unroll 6
        for (int b = 0; b < 3; ++b) {
          const int64_t tap = flipped ? 3 * (2 - a) + (2 - b) : 3 * a + b;
          const float* s = w + row * row_stride + col0 * col_stride + tap;
          for (int l = 0; l < lanes; ++l) f[a][b][l] = s[l * col_stride];
        }
      separable<alpha, alpha, 3, 3>(
          f43.g, f43.g, [&](int a, int b) { return f[a][b]; },
          [&](int i, int j, const float* values) {
            std::memcpy(u + ((i * alpha + j) * in + row) * out + col0, values, sizeof(float) * lanes);
          });
    }
}

[[noreturn]] void refused(const char* pass, const conv2d_geometry& g) {
  throw std::runtime_error(std::string("winograd ") + pass + " of " + g.str() +
                           ": an SGEMM was refused by oneDNN");
}

}  // namespace

float* winograd_conv::scratch::reserve(int64_t count) {
  if (static_cast<int64_t>(values.size()) < count) values.resize(static_cast<std::size_t>(count));
  return values.data();
}

bool winograd_conv::handles(const conv2d_geometry& g) {
  return g.r == 3 && g.s == 3 && g.stride == 1 && g.padding >= 0 && g.padding <= 2 && g.c % lanes == 0 &&
         g.k % lanes == 0 && g.c > 0 && g.k > 0 && g.p() > 0 && g.q() > 0;
}

bool winograd_conv::pays(const conv2d_geometry& g) { return handles(g) && g.c >= 64 && g.k >= 64; }

bool winograd_conv::correlate(const float* in, int64_t n, int64_t cin, int64_t h, int64_t w, int64_t pad,
                              const float* u, int64_t cout, const float* bias, float* out, int threads) {
  const int64_t p = h + 2 * pad - 2, q = w + 2 * pad - 2;
  const tiling tl(n, p, q);
  const int64_t tiles = tl.tiles, rows = tl.patch_rows(), cols = tl.patch_cols();
  float* padded = padded_.reserve(n * rows * cols * cin);
  to_padded_nhwc(in, n, cin, h, w, pad, rows, cols, padded, threads);
  const int64_t batch = tile_batch(tiles, std::max(cin, cout));
  float* v = data_.reserve(points * batch * cin);
  float* m = products_.reserve(points * batch * cout);
  float* staged = staged_.reserve(n * p * q * cout);  // the output in NHWC
  const int64_t plane = p * q, row_blocks = (plane + 63) / 64;
  std::atomic<bool> ok{true};
  omp_threads_scope one(1);  // each SGEMM on its own thread: oneDNN sees a team of one
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    for (int64_t first = 0; first < tiles; first += batch) {
      const int64_t count = std::min(batch, tiles - first);
#pragma omp for schedule(static)
      for (int64_t t = 0; t < count; ++t) {
        patch_points(padded + tl.origin(first + t, rows, cols, cin), cols * cin, cin, v + t * cin,
                     batch * cin);
      }
#pragma omp for schedule(static)
      for (int xi = 0; xi < points; ++xi)
        if (!sgemm_single(false, false, count, cout, cin, 1.f, v + xi * batch * cin, cin, u + xi * cin * cout,
                          cout, 0.f, m + xi * batch * cout, cout))
          ok.store(false, std::memory_order_relaxed);
#pragma omp for schedule(static)
      for (int64_t t = 0; t < count; ++t) {
        const int64_t tile = first + t;
        tile_output(m + t * cout, batch * cout, cout, bias, staged, tl.image(tile), tl.row(tile),
                    tl.col(tile), p, q);
      }
    }
    // NHWC → NCHW, 64 positions of a plane at a time.
#pragma omp for schedule(static)
    for (int64_t item = 0; item < n * row_blocks; ++item) {
      const int64_t b = item / row_blocks, first = item % row_blocks * 64,
                    count = std::min<int64_t>(64, plane - first);
      transpose(staged + (b * plane + first) * cout, cout, out + b * cout * plane + first, plane, count,
                cout);
    }
  }
  return ok.load();
}

void winograd_conv::forward(const conv2d_geometry& g, const float* x, const float* w, const float* b,
                            float* y, int threads) {
  float* u = filters_.reserve(points * g.c * g.k);
  filter_points(w, g.c, g.k, 9, g.c * 9, false, u, threads);  // u[ξ][c][k] from w[k][c]
  if (!correlate(x, g.n, g.c, g.h, g.w, g.padding, u, g.k, g.bias ? b : nullptr, y, threads))
    refused("forward", g);
}

void winograd_conv::backward_data(const conv2d_geometry& g, const float* dy, const float* w, float* dx,
                                  int threads) {
  // dx = dy padded by 2 − padding, correlated with the flipped filters, in and out swapped.
  float* u = filters_.reserve(points * g.k * g.c);
  filter_points(w, g.k, g.c, g.c * 9, 9, true, u, threads);  // u[ξ][k][c] from w[k][c] flipped
  if (!correlate(dy, g.n, g.k, g.p(), g.q(), 2 - g.padding, u, g.c, nullptr, dx, threads))
    refused("backward data", g);
}

void winograd_conv::backward_filter(const conv2d_geometry& g, const float* x, const float* dy, float* dw,
                                    float* db, int threads) {
  const int64_t p = g.p(), q = g.q(), c = g.c, k = g.k;
  const tiling tl(g.n, p, q);
  const int64_t tiles = tl.tiles, rows = tl.patch_rows(), cols = tl.patch_cols();
  const int64_t dy_rows = 4 * tl.th, dy_cols = 4 * tl.tw;  // dy's grid: whole tiles, zero beyond p × q
  float* padded = padded_.reserve(g.n * rows * cols * c);
  to_padded_nhwc(x, g.n, c, g.h, g.w, g.padding, rows, cols, padded, threads);
  float* padded_dy = padded_dy_.reserve(g.n * dy_rows * dy_cols * k);
  to_padded_nhwc(dy, g.n, k, p, q, 0, dy_rows, dy_cols, padded_dy, threads);
  const int64_t batch = tile_batch(tiles, std::max(c, k));
  float* v = data_.reserve(points * batch * c);
  float* d = dy_points_.reserve(points * batch * k);
  float* sums = sums_.reserve(points * k * c);  // Σ over the tiles of Dξᵀ Xξ, point ξ a k × c panel
  std::atomic<bool> ok{true};
  {
    omp_threads_scope one(1);
#pragma omp parallel num_threads(threads) if (threads > 1)
    for (int64_t first = 0; first < tiles; first += batch) {
      const int64_t count = std::min(batch, tiles - first);
#pragma omp for schedule(static)
      for (int64_t t = 0; t < count; ++t) {
        patch_points(padded + tl.origin(first + t, rows, cols, c), cols * c, c, v + t * c, batch * c);
        dy_points(padded_dy + tl.origin(first + t, dy_rows, dy_cols, k), dy_cols * k, k, d + t * k,
                  batch * k);
      }
      // Batches in order, each point on one thread: the sums' order does not depend on the team.
#pragma omp for schedule(static)
      for (int xi = 0; xi < points; ++xi)
        if (!sgemm_single(true, false, k, c, count, 1.f, d + xi * batch * k, k, v + xi * batch * c, c,
                          first == 0 ? 0.f : 1.f, sums + xi * k * c, c))
          ok.store(false, std::memory_order_relaxed);
    }
  }
  if (!ok.load()) refused("backward filter", g);
  // dw[k][c] += A₃ᵀ S A₃, 16 input channels at a time.
  const int team = team_for(k * c * points, threads);
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
  for (int64_t ko = 0; ko < k; ++ko)
    for (int64_t c0 = 0; c0 < c; c0 += lanes) {
      separable<3, 3, alpha, alpha>(
          f34.at, f34.at, [&](int i, int j) { return sums + ((i * alpha + j) * k + ko) * c + c0; },
          [&](int aa, int bb, const float* values) {
            float* o = dw + (ko * c + c0) * 9 + aa * 3 + bb;
            for (int l = 0; l < lanes; ++l) o[l * 9] += values[l];
          });
    }
  if (!g.bias) return;
  const int64_t plane = p * q;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
  for (int64_t ko = 0; ko < k; ++ko) {
    double sum = 0;
    for (int64_t b = 0; b < g.n; ++b) {
      const float* s = dy + (b * k + ko) * plane;
      for (int64_t i = 0; i < plane; ++i) sum += s[i];
    }
    db[ko] += static_cast<float>(sum);
  }
}

}  // namespace petra::cpu
