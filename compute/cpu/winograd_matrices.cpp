// F(m, r)'s matrices as vectors, for the tests and anyone who wants to read them.
#include "compute/cpu/winograd_matrices.hpp"

#include <stdexcept>
#include <string>

namespace petra::cpu {

winograd_matrices winograd_f(int m, int r) {
  using namespace winograd_tables;
  if (m < 1 || r < 1 || m + r != alpha + 1)
    throw std::invalid_argument("winograd_f: F(" + std::to_string(m) + ", " + std::to_string(r) +
                                ") needs m + r = 7 (6 points), both at least 1");
  const tables t = make_tables(m, r);
  winograd_matrices f;
  f.m = m, f.r = r;
  f.at.assign(t.at.v, t.at.v + m * alpha);
  f.g.assign(t.g.v, t.g.v + alpha * r);
  f.bt.assign(t.bt.v, t.bt.v + alpha * alpha);
  return f;
}

}  // namespace petra::cpu
