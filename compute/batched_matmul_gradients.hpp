// The batched matmul's backward as two more batched products, for each choice of transposes, so
// that every backend computes da and db with its forward's GEMM and the same operand order.
#pragma once

#include <utility>

#include "compute/tensor.hpp"

namespace petra {

enum class bmm_operand { a, b, dc };

/// One gradient = op(first)·op(second), with the transposes given.
struct bmm_product {
  bmm_operand first;
  bool transpose_first;
  bmm_operand second;
  bool transpose_second;
};

inline const tensor& pick(bmm_operand which, const tensor& a, const tensor& b, const tensor& dc) {
  return which == bmm_operand::a ? a : which == bmm_operand::b ? b : dc;
}

/// {da's product, db's product} of c = op(a)·op(b): with g = dc,
///   c = a·b:   da = g·bᵀ, db = aᵀ·g       c = aᵀ·b:   da = b·gᵀ,  db = a·g
///   c = a·bᵀ:  da = g·b,  db = gᵀ·a       c = aᵀ·bᵀ:  da = bᵀ·gᵀ, db = gᵀ·aᵀ
/// (each the transpose of d op(·) where the operand is stored transposed).
inline std::pair<bmm_product, bmm_product> batched_matmul_gradient_products(bool transpose_a,
                                                                            bool transpose_b) {
  using o = bmm_operand;
  if (!transpose_a && !transpose_b) return {{o::dc, false, o::b, true}, {o::a, true, o::dc, false}};
  if (transpose_a && !transpose_b) return {{o::b, false, o::dc, true}, {o::a, false, o::dc, false}};
  if (!transpose_a && transpose_b) return {{o::dc, false, o::b, false}, {o::dc, true, o::a, false}};
  return {{o::b, true, o::dc, true}, {o::dc, true, o::a, true}};
}

}  // namespace petra
