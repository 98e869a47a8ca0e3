// The optimizers' backend ops (SGD, AdamW): each checks its arguments once, for every backend, and
// calls the backend's *_impl.
#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "compute/op_checks.hpp"

namespace petra {
namespace {

/// The tensors a multi-tensor step has met so far. A tensor twice would be updated twice (on a GPU,
/// at once); known by its buffer and offset (data() is not the host's to read on every device).
class tensor_set {
 public:
  void add(const char* op, const std::string& which, std::initializer_list<const tensor*> tensors) {
    for (const tensor* u : tensors)
      if (u && u->numel() && !seen_.insert({u->buffer().get(), u->offset()}).second)
        fail_op(op, which + " shares a tensor with an earlier target: each tensor may be stepped once");
  }

 private:
  std::set<std::pair<const storage*, std::size_t>> seen_;
};

}  // namespace

void backend::require_sgd(const char* op, const tensor& w, const tensor& grad, const tensor& momentum_buffer,
                          const sgd_update_params& p) const {
  require(op, "w", w);
  require(op, "grad", grad);
  require_same_shape(op, "grad", grad, "w", w);
  if (p.nesterov && p.momentum <= 0.f)
    fail_op(op, "nesterov needs a positive momentum, got " + std::to_string(p.momentum) +
                    ": set momentum (e.g. 0.9) or turn nesterov off");
  if (p.momentum < 0.f) fail_op(op, "momentum " + std::to_string(p.momentum) + " must not be negative");
  if (p.momentum != 0.f) {
    if (!momentum_buffer.defined())
      fail_op(op, "momentum_buffer is undefined: pass a tensor shaped like w, zero before the first step");
    require(op, "momentum_buffer", momentum_buffer);
    require_same_shape(op, "momentum_buffer", momentum_buffer, "w", w);
  }
}

void backend::sgd_update(tensor& w, const tensor& grad, tensor& momentum_buffer, const sgd_update_params& p) {
  require_sgd("sgd_update", w, grad, momentum_buffer, p);
  sgd_update_impl(w, grad, momentum_buffer, p);
}

void backend::sgd_step(const std::vector<sgd_target>& targets, const sgd_update_params& p) {
  const char* op = "sgd_step";
  tensor_set seen;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const sgd_target& t = targets[i];
    const std::string which = "targets[" + std::to_string(i) + "]";
    if (!t.w || !t.grad || !t.momentum_buffer)
      fail_op(op, which + " lacks a tensor: w, grad and momentum_buffer must point to tensors");
    sgd_update_params own = p;
    own.weight_decay = t.weight_decay;
    require_sgd(op, *t.w, *t.grad, *t.momentum_buffer, own);
    seen.add(op, which, {t.w, t.grad, p.momentum != 0.f ? t.momentum_buffer : nullptr});
  }
  sgd_step_impl(targets, p);
}

void backend::sgd_step_impl(const std::vector<sgd_target>& targets, const sgd_update_params& p) {
  for (const sgd_target& t : targets) {
    sgd_update_params own = p;
    own.weight_decay = t.weight_decay;
    sgd_update_impl(*t.w, *t.grad, *t.momentum_buffer, own);
    fill_zero_impl(*t.grad);
  }
}

void backend::require_adamw(const char* op, const tensor& w, const tensor& grad, const tensor& m,
                            const tensor& v, const adamw_update_params& p) const {
  require(op, "w", w);
  require(op, "grad", grad);
  require_same_shape(op, "grad", grad, "w", w);
  for (const auto& [name, t] : {std::pair<const char*, const tensor*>{"m", &m}, {"v", &v}}) {
    if (!t->defined())
      fail_op(op,
              std::string(name) + " is undefined: pass a tensor shaped like w, zero before the first step");
    require(op, name, *t);
    require_same_shape(op, name, *t, "w", w);
  }
  for (const auto& [name, beta] : {std::pair<const char*, float>{"beta1", p.beta1}, {"beta2", p.beta2}})
    if (!(beta >= 0.f && beta < 1.f))
      fail_op(op, std::string(name) + " = " + std::to_string(beta) + " must be in [0, 1)");
  if (!(p.eps > 0.f)) fail_op(op, "eps = " + std::to_string(p.eps) + " must be positive");
  if (p.step < 1)
    fail_op(op, "step = " + std::to_string(p.step) + " must be ≥ 1 (t of the bias corrections)");
  if (!std::isfinite(p.lr) || !std::isfinite(p.weight_decay))
    fail_op(op, "lr and weight_decay must be finite");
}

void backend::adamw_update(tensor& w, const tensor& grad, tensor& m, tensor& v,
                           const adamw_update_params& p) {
  require_adamw("adamw_update", w, grad, m, v, p);
  adamw_update_impl(w, grad, m, v, p);
}

void backend::adamw_step(const std::vector<adamw_target>& targets, const adamw_update_params& p) {
  const char* op = "adamw_step";
  tensor_set seen;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const adamw_target& t = targets[i];
    const std::string which = "targets[" + std::to_string(i) + "]";
    if (!t.w || !t.grad || !t.m || !t.v)
      fail_op(op, which + " lacks a tensor: w, grad, m and v must point to tensors");
    adamw_update_params own = p;
    own.weight_decay = t.weight_decay;
    require_adamw(op, *t.w, *t.grad, *t.m, *t.v, own);
    seen.add(op, which, {t.w, t.grad, t.m, t.v});
  }
  adamw_step_impl(targets, p);
}

void backend::adamw_step_impl(const std::vector<adamw_target>& targets, const adamw_update_params& p) {
  for (const adamw_target& t : targets) {
    adamw_update_params own = p;
    own.weight_decay = t.weight_decay;
    adamw_update_impl(*t.w, *t.grad, *t.m, *t.v, own);
    fill_zero_impl(*t.grad);
  }
}

}  // namespace petra
