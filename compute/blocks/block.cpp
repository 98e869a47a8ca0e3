// Defaults for non-reversible blocks and input checks.
#include "compute/blocks/block.hpp"

#include <stdexcept>

namespace petra {

activation block::inverse(const activation&) {
  throw std::logic_error(name() + " (" + kind() +
                         ") is not reversible: it has no inverse; its stage must keep inputs");
}

activation block::rebuild_input(backend&, const activation&, tape&) {
  throw std::logic_error(name() + " (" + kind() +
                         ") is not reversible: it cannot rebuild its input; its stage must keep inputs");
}

std::pair<activation, activation> block::backward_from_output(const activation&, const activation&) {
  throw std::logic_error(name() + " (" + kind() +
                         ") is not reversible: it cannot rebuild its input; its stage must keep inputs");
}

void expect_streams(const block& b, const activation& x, bool two_streams, const char* what) {
  if (!x.x1.defined() || x.two_streams() != two_streams)
    throw std::invalid_argument(b.name() + " (" + b.kind() + "): " + what + " must be " +
                                (two_streams ? "two streams (x1, x2)" : "one tensor") + ", got " +
                                (!x.x1.defined()   ? "nothing"
                                 : x.two_streams() ? "two streams"
                                                   : "one tensor"));
}

}  // namespace petra

namespace petra {

std::pair<activation, activation> block::jvp(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) {
  expect_streams(*this, x, x.two_streams(), "input");
  // A tangent may stack m tangents along the batch (compute/forward/stacked.hpp): m·N samples of the
  // input's per-sample shape, the same m in both streams.
  int64_t groups = 0;
  auto check = [&](const tensor& stream, const tensor& tangent, const char* which) {
    if (!tangent.defined()) return;
    bool fits = stream.defined() && tangent.rank() == stream.rank() && stream.dim(0) > 0 &&
                tangent.dim(0) > 0 && tangent.dim(0) % stream.dim(0) == 0;
    for (std::size_t i = 1; fits && i < stream.rank(); ++i) fits = tangent.dim(i) == stream.dim(i);
    const int64_t m = fits ? tangent.dim(0) / stream.dim(0) : 0;
    if (!fits || (groups != 0 && m != groups))
      throw std::invalid_argument(name() + " (" + kind() + "): the input tangent's " + which + " " +
                                  tangent.shape_str() + " must have the shape of the input's, " +
                                  (stream.defined() ? stream.shape_str() : std::string("absent")) +
                                  ", or stack m of them along the batch (the same m in both streams)");
    groups = m;
  };
  check(x.x1, x_dot.x1, "x1");
  check(x.x2, x_dot.x2, "x2");
  return jvp_impl(x, x_dot, mode, t, theta_dot);
}

std::pair<activation, activation> block::jvp_impl(const activation&, const activation&, pass, tape*,
                                                  const parameter_tangents&) {
  throw std::logic_error(name() + " (" + kind() + ") has no forward mode (jvp)");
}

}  // namespace petra
