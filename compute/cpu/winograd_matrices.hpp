// The matrices of Winograd's minimal filtering F(m, r) with α = m + r − 1 = 6 points, by Toom-Cook
// at 0, ±1, ±2 and ∞: computed in double at compile time (constexpr), and as fp32 constants for the
// kernels of winograd.cpp, whose unrolled loops fold their zeros.
#pragma once

#include <vector>

namespace petra::cpu {

namespace winograd_tables {

constexpr int alpha = 6;  // points per axis: m + r − 1
constexpr double finite_points[alpha - 1] = {0, 1, -1, 2, -2};

/// A matrix of up to α × α doubles, row-major (its users know its width).
struct dmatrix {
  double v[alpha * alpha] = {};
};

constexpr double magnitude(double x) { return x < 0 ? -x : x; }

/// α × n: row j holds p_j⁰ … p_jⁿ⁻¹ at the finite points, the last row (∞) the leading coefficient.
constexpr dmatrix evaluation(int n) {
  dmatrix e;
  for (int j = 0; j < alpha - 1; ++j) {
    double power = 1;
    for (int i = 0; i < n; ++i, power *= finite_points[j]) e.v[j * n + i] = power;
  }
  e.v[(alpha - 1) * n + n - 1] = 1;
  return e;
}

/// The inverse of an α × α matrix (Gauss-Jordan, partial pivoting).
constexpr dmatrix inverse(dmatrix a) {
  dmatrix inv;
  for (int i = 0; i < alpha; ++i) inv.v[i * alpha + i] = 1;
  for (int col = 0; col < alpha; ++col) {
    int pivot = col;
    for (int row = col + 1; row < alpha; ++row)
      if (magnitude(a.v[row * alpha + col]) > magnitude(a.v[pivot * alpha + col])) pivot = row;
    for (int j = 0; j < alpha; ++j) {
      const double t = a.v[col * alpha + j], u = inv.v[col * alpha + j];
      a.v[col * alpha + j] = a.v[pivot * alpha + j], inv.v[col * alpha + j] = inv.v[pivot * alpha + j];
      a.v[pivot * alpha + j] = t, inv.v[pivot * alpha + j] = u;
    }
    const double scale = 1 / a.v[col * alpha + col];
    for (int j = 0; j < alpha; ++j) a.v[col * alpha + j] *= scale, inv.v[col * alpha + j] *= scale;
    for (int row = 0; row < alpha; ++row) {
      if (row == col) continue;
      const double f = a.v[row * alpha + col];
      for (int j = 0; j < alpha; ++j)
        a.v[row * alpha + j] -= f * a.v[col * alpha + j],
            inv.v[row * alpha + j] -= f * inv.v[col * alpha + j];
    }
  }
  return inv;
}

/// F(m, r)'s matrices: at (m × α), g (α × r), bt (α × α), from y = V_mᵀ diag(V_r g) V_α⁻ᵀ d (the
/// transpose of Toom-Cook's linear convolution V_α⁻¹ [(V_r g) ⊙ (V_m h)]).
struct tables {
  dmatrix at, g, bt;
};

constexpr tables make_tables(int m, int r) {
  tables t;
  const dmatrix vm = evaluation(m), inv = inverse(evaluation(alpha));
  t.g = evaluation(r);
  for (int a = 0; a < m; ++a)
    for (int i = 0; i < alpha; ++i) t.at.v[a * alpha + i] = vm.v[i * m + a];
  for (int i = 0; i < alpha; ++i)
    for (int a = 0; a < alpha; ++a) t.bt.v[i * alpha + a] = inv.v[a * alpha + i];
  return t;
}

/// The same in fp32, as the kernels read them: constants, so that unrolled loops fold the zeros.
struct ftables {
  float at[alpha * alpha] = {}, g[alpha * alpha] = {}, bt[alpha * alpha] = {};
};

constexpr ftables to_float(const tables& t) {
  ftables f;
  for (int i = 0; i < alpha * alpha; ++i)
    f.at[i] = static_cast<float>(t.at.v[i]), f.g[i] = static_cast<float>(t.g.v[i]),
    f.bt[i] = static_cast<float>(t.bt.v[i]);
  return f;
}

inline constexpr ftables f43 = to_float(make_tables(4, 3));  // forward and backward data: at 4 × 6, g 6 × 3
inline constexpr ftables f34 =
    to_float(make_tables(3, 4));  // backward filter: at 3 × 6, g 6 × 4 (bt the same)

}  // namespace winograd_tables

/// The 1-D matrices of F(m, r) for α = m + r − 1 = 6 points, row-major: y = Aᵀ[(G g) ⊙ (Bᵀ d)] is
/// the correlation y_i = Σ_k g_k d_{i+k} (i < m, k < r) of a filter g (r) with data d (6).
struct winograd_matrices {
  int m = 0, r = 0;
  std::vector<double> at;  // m × 6
  std::vector<double> g;   // 6 × r
  std::vector<double> bt;  // 6 × 6
};

/// F(m, r) with m + r = 7, from the points 0, 1, −1, 2, −2 and ∞.
winograd_matrices winograd_f(int m, int r);

}  // namespace petra::cpu
