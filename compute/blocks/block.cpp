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
