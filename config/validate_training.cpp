// Checks of a run_config's training: section and of what a model cannot train with.
#include <cmath>

#include "config/validate_checker.hpp"

namespace petra::config::detail {
namespace {

void validate_optimizer(const optimizer_config& optimizer, const checker& check) {
  // Each optimizer's own keys, refused under the other: nothing set is silently ignored.
  const bool adamw = optimizer.kind == optimizer_kind::adamw;
  for (const char* key : {"momentum", "nesterov", "betas", "eps"}) {
    const std::string path = std::string("training.optimizer.") + key;
    const bool sgd_key = path == "training.optimizer.momentum" || path == "training.optimizer.nesterov";
    if (check.set(path) && sgd_key == adamw)
      check.fail(path, std::string("is set but training.optimizer.kind is '") + to_string(optimizer.kind) +
                           "' " + check.where("training.optimizer.kind") + "; it is a setting of " +
                           (sgd_key ? "sgd" : "adamw") + ": set kind to " + (sgd_key ? "sgd" : "adamw") +
                           ", or remove this key");
  }
  check.at_least("training.optimizer.base_lr", optimizer.base_lr, 0.0, "a learning rate cannot be negative");
  if (!(optimizer.momentum >= 0.0 && optimizer.momentum < 1.0))
    check.fail("training.optimizer.momentum", "got " + show(optimizer.momentum) + "; it must be in [0, 1)");
  if (optimizer.betas.size() != 2)
    check.fail("training.optimizer.betas", "has " + std::to_string(optimizer.betas.size()) +
                                               " entries; it is [β1, β2], e.g. [0.9, 0.999]");
  for (std::size_t i = 0; i < 2; ++i)
    if (!(optimizer.betas[i] >= 0.0 && optimizer.betas[i] < 1.0))
      check.fail("training.optimizer.betas", "entry " + std::to_string(i) + " is " +
                                                 show(optimizer.betas[i]) + "; each β must be in [0, 1)");
  if (!(optimizer.eps > 0.0 && std::isfinite(optimizer.eps)))
    check.fail("training.optimizer.eps", "got " + show(optimizer.eps) + "; it must be positive (e.g. 1e-08)");
  check.at_least("training.optimizer.weight_decay", optimizer.weight_decay, 0.0,
                 "weight decay cannot be negative");
}

}  // namespace

void validate_training(const training_config& training, const checker& check) {
  for (const auto& [path, on] : {std::pair{"training.stash_inputs", training.stash_inputs},
                                 std::pair{"training.stash_weights", training.stash_weights}})
    if (on && training.method != training_method::delayed)
      check.fail(
          path, std::string("is true but training.method is '") + to_string(training.method) + "' " +
                    check.where("training.method") +
                    "; stashing inputs or weights is a switch of the 'delayed' method (the PipeDream/DSP-like"
                    " baselines): set training.method to delayed, or remove this key");
  for (const char* key : {"guess", "target", "aux_width"}) {
    const std::string path = std::string("training.forward_gradient.") + key;
    if (check.set(path) && training.method != training_method::forward_gradient)
      check.fail(path, "is set but training.method is '" + to_string(training.method) + "' " +
                           check.where("training.method") +
                           "; it is a setting of the 'forward_gradient' method: set training.method to"
                           " forward_gradient, or remove this key");
  }
  check.at_least("training.forward_gradient.aux_width", training.forward_gradient.aux_width, 1,
                 "the channels of each stage's auxiliary head must be positive");
  check.at_least("training.epochs", training.epochs, 1, "must be positive");
  check.at_least("training.micro_batch", training.micro_batch, 1, "must be positive");
  check.at_least("training.accumulation", training.accumulation, 1,
                 "must be positive (k micro-batches per optimizer step; 1 = no accumulation)");
  check.at_least("training.bn_recalibration", training.bn_recalibration, 0, "0 turns it off");
  if (training.bn_recalibration > 0 && !training.drain_at_epoch_end)
    check.fail("training.bn_recalibration",
               "is set but training.drain_at_epoch_end is false " +
                   check.where("training.drain_at_epoch_end") +
                   "; it re-estimates the BN statistics of the drained weights before their evaluation, and "
                   "without a drain the epochs are evaluated by waves on the live weights: set "
                   "drain_at_epoch_end: true, or remove this key");

  validate_optimizer(training.optimizer, check);

  const schedule_config& schedule = training.schedule;
  check.at_least("training.schedule.warmup_epochs", schedule.warmup_epochs, 0.0, "0 turns warm-up off");
  for (size_t i = 0; i < schedule.milestones.size(); ++i) {
    if (schedule.milestones[i] < 0)
      check.fail("training.schedule.milestones",
                 "entry " + std::to_string(i) + " is negative; milestones are epochs");
    if (i > 0 && schedule.milestones[i] <= schedule.milestones[i - 1])
      check.fail("training.schedule.milestones",
                 "entry " + std::to_string(i) + " (" + show(schedule.milestones[i]) +
                     ") does not follow the previous one; milestones must increase");
  }
  if (!(schedule.gamma > 0))
    check.fail("training.schedule.gamma",
               "got " + show(schedule.gamma) + "; the decay factor must be positive");
}

// Forward gradients' auxiliary heads (local guesses and targets) read (N, C, H, W) maps, and only
// RevNets have batch norm to recalibrate.
void validate_model_method(const model_config& model, const training_config& training, const checker& check) {
  if (model.arch != model_arch::revvit) return;
  if (training.bn_recalibration > 0)
    check.fail("training.bn_recalibration",
               "is set but model.arch is 'revvit' " + check.where("model.arch") +
                   ", which has no batch norm (its layer norms keep no running statistics): remove this key");
  if (training.method != training_method::forward_gradient) return;
  const forward_gradient_config& fg = training.forward_gradient;
  const char* key = fg.guess == gradient_guess::local     ? "training.forward_gradient.guess"
                    : fg.target == gradient_target::local ? "training.forward_gradient.target"
                                                          : nullptr;
  if (key)
    check.fail(key, std::string("is local, which needs each stage's auxiliary head, and those are RevNet "
                                "heads (a convolution on (N, C, H, W) maps) but model.arch is 'revvit' ") +
                        check.where("model.arch") +
                        ": with revvit, forward_gradient takes guess random and target global");
}

}  // namespace petra::config::detail
