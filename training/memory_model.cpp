// Memory model.
#include "training/memory_model.hpp"

#include "training/tick_schedule.hpp"

namespace petra {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::vector<stage_profile> profile_stages(std::vector<std::vector<std::unique_ptr<block>>>& stages,
                                          const activation_shape& input, optimizer_kind optimizer) {
  std::vector<stage_profile> out;
  activation_shape shape = input;
  for (auto& group : stages) {
    stage_profile p;
    p.input = shape;
    p.reversible = true;
    p.optimizer_moments = optimizer == optimizer_kind::adamw ? 2 : 1;
    for (auto& b : group) {
      if (!p.name.empty()) p.name += "+";
      p.name += b->name();
      p.is_stem = p.is_stem || b->kind() == "stem";
      p.is_downsampling = p.is_downsampling || b->kind() == "downsample";
      p.reversible = p.reversible && b->reversible();
      for (parameter* q : b->parameters()) p.params += q->value.numel();
      for (const buffer_ref& r : b->buffers()) p.buffers += r.value->numel();
      shape = b->output_shape(shape);
    }
    p.output = shape;
    out.push_back(p);
  }
  return out;
}

std::vector<memory_row> memory_table(const std::vector<stage_profile>& stages, int accumulation,
                                     int inversion_sample_every, bool backward_first) {
  const int64_t J = static_cast<int64_t>(stages.size());
  std::vector<memory_row> rows = {{true, true}, {true, false}, {false, true}, {false, false}};
  for (memory_row& row : rows) {
    int64_t paper = 0, runtime = 0;
    for (int64_t j = 0; j < J; ++j) {
      const stage_profile& s = stages[j];
      const int64_t staleness = round_trip_ticks(static_cast<std::size_t>(j), static_cast<std::size_t>(J));
      // One stream of the input (the image for the stem), doubled for downsampling stages.
      int64_t a = numel_of(s.input.x1);
      if (s.is_downsampling) a *= 2;
      paper += s.params + s.buffers + a;
      if (row.stash_inputs || s.is_downsampling) paper += a * staleness;
      if (row.stash_weights) paper += s.params * ceil_div(staleness, accumulation);
      const bool keep = row.stash_inputs || !s.reversible;
      runtime += runtime_stage_bytes(s, static_cast<std::size_t>(j), static_cast<std::size_t>(J), keep,
                                     row.stash_weights, accumulation, inversion_sample_every, backward_first);
    }
    row.paper_gb = static_cast<double>(paper) * 4 / 1e9;
    row.runtime_gb = static_cast<double>(runtime) / 1e9;
  }
  return rows;
}

int64_t runtime_stage_bytes(const stage_profile& s, std::size_t j, std::size_t J, bool keep_inputs,
                            bool stash_weights, int accumulation, int inversion_sample_every,
                            bool backward_first) {
  const int64_t delay = round_trip_ticks(j, J);
  // Backwards between a micro-batch's forward and its own: the last stage runs both in one tick.
  const int64_t between = backward_first && j + 1 < J ? delay - 1 : delay;
  const int64_t outstanding = between + 1;  // forwards awaiting their backward, at the peak
  // Weights, their gradients and the optimizer's tensors.
  int64_t floats = (2 + s.optimizer_moments) * s.params + s.buffers;
  if (keep_inputs)
    floats += s.input.numel() * outstanding;
  else if (inversion_sample_every > 0)  // the sampled inputs of the inversion error
    floats += s.input.numel() * ceil_div(outstanding, inversion_sample_every);
  if (stash_weights) floats += s.params * (ceil_div(between, accumulation) + 1);
  return floats * 4;
}

int64_t fallback_stage_bytes(const stage_profile& s, std::size_t j, std::size_t J, int accumulation,
                             int inversion_sample_every, bool backward_first) {
  if (!s.reversible) return 0;
  return runtime_stage_bytes(s, j, J, true, false, accumulation, inversion_sample_every, backward_first) -
         runtime_stage_bytes(s, j, J, false, false, accumulation, inversion_sample_every, backward_first);
}

int64_t forward_gradient_stage_bytes(const stage_profile& s, std::size_t j, std::size_t J, int64_t aux_params,
                                     int64_t aux_buffers, bool local_target) {
  const bool last = j + 1 == J;
  const int64_t outstanding = forward_gradient_ticks(j, J, local_target) + 1;
  int64_t floats = (2 + s.optimizer_moments) * (s.params + aux_params) + s.buffers + aux_buffers;
  floats += s.input.numel() * outstanding;
  if (!last) floats += s.output.numel() * outstanding;  // the guesses
  return floats * 4;
}

}  // namespace petra
