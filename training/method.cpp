// Training methods.
#include "training/method.hpp"

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
    case method_kind::forward_gradient:
      return std::string("forward_gradient") +
             (forward_gradient.guess == guess_kind::random ? "+random_guess" : "") +
             (forward_gradient.target == target_kind::local ? "+local_target" : "");
  }
  return "?";
}

stage_options method_options::for_stage(int inversion_sample_every, bool last) const {
  stage_options o;
  // Forward gradients send nothing back but a scalar per sample: the output is not returned to be
  // inverted, so the stage keeps its input (exact) for the backward of ĝ_j through itself.
  o.keep_inputs = (kind == method_kind::delayed && stash_inputs) || kind == method_kind::forward_gradient;
  o.stash_weights = kind == method_kind::delayed && stash_weights;
  o.taped = kind == method_kind::backprop;
  o.tape_forward = last && (kind == method_kind::petra || (kind == method_kind::delayed && !stash_weights));
  o.inversion_sample_every = inversion_sample_every;
  return o;
}

}  // namespace petra
