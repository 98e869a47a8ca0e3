// Training methods.
#include "compute/pipeline/method.hpp"

#include <stdexcept>

namespace petra {

std::string method_options::str() const {
  switch (kind) {
    case method_kind::backprop:
      return "backprop";
    case method_kind::petra:
      return "petra";
    case method_kind::delayed:
      return std::string("delayed") + (stash_inputs ? "+inputs" : "") + (stash_weights ? "+weights" : "");
  }
  return "?";
}

stage_options method_options::for_stage(int inversion_sample_every) const {
  stage_options o;
  o.keep_inputs = kind == method_kind::delayed && stash_inputs;
  o.stash_weights = kind == method_kind::delayed && stash_weights;
  o.taped = kind == method_kind::backprop;
  o.inversion_sample_every = inversion_sample_every;
  return o;
}

}  // namespace petra
