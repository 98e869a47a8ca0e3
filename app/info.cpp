// `petra model-info` and `petra memory-model`: what a model holds, per stage.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "app/commands.hpp"
#include "compute/blocks/aux_head.hpp"
#include "compute/pipeline/partition.hpp"
#include "training/memory_model.hpp"
#include "training/runtime_support.hpp"
#include "training/setup.hpp"

namespace petra::app {
namespace {

struct model_profile {
  network_spec spec;
  std::vector<stage_profile> stages;
};

/// What the optimizer holds per parameter, as the memory model's legend names it.
const char* optimizer_state_name(const config::run_config& cfg) {
  return cfg.training.optimizer.kind == config::optimizer_kind::adamw ? "AdamW's 2 moments" : "momentum";
}

model_profile profile(const config::run_config& cfg, backend& be) {
  model_profile m;
  m.spec = model_spec(cfg.model);
  auto blocks = build_network(m.spec, be, cfg.training.seed);
  auto groups =
      partition_blocks(std::move(blocks), resolve_partition(cfg.pipeline.stage_blocks, blocks.size()));
  const optimizer_kind optimizer = cfg.training.optimizer.kind == config::optimizer_kind::adamw
                                       ? optimizer_kind::adamw
                                       : optimizer_kind::sgd;
  m.stages = profile_stages(groups, input_shape(m.spec, cfg.training.micro_batch), optimizer);
  return m;
}

/// Trainable values and BN statistics of the auxiliary head forward_gradient puts on a stage's output
/// (none on the last stage, nor when the method needs none): (0, 0) where there is none.
std::pair<int64_t, int64_t> aux_head_size(const config::run_config& cfg, const stage_profile& s, bool last,
                                          backend& be) {
  if (cfg.training.method != config::training_method::forward_gradient || last ||
      !method_for(cfg.training).forward_gradient.needs_aux_head())
    return {0, 0};
  aux_head_block head(be, s.name + ".aux", static_cast<int>(s.output.x1.at(1)),
                      cfg.training.forward_gradient.aux_width, cfg.model.num_classes, cfg.training.seed);
  int64_t params = 0, buffers = 0;
  for (parameter* p : head.parameters()) params += p->value.numel();
  for (const buffer_ref& b : head.buffers()) buffers += b.value->numel();
  return {params, buffers};
}

/// A flag's value as the config choice it names; a bad name is a config_error naming the flag.
template <class Choice>
Choice parse_flag(const char* flag, const std::string& text) {
  try {
    return config::parse_choice<Choice>(text);
  } catch (const config::config_error& e) {
    throw config::config_error(std::string(flag) + ": " + e.what());
  }
}

config::run_config load_with_flags(const std::string& config, const std::vector<std::string>& sets,
                                   const model_flags& flags) {
  config::run_config cfg = config::load_config(config, sets);
  if (!flags.arch.empty()) {
    cfg.model = config::model_config{};
    cfg.model.arch = parse_flag<config::model_arch>("--arch", flags.arch);
    // The inputs the presets train each on: 1×28×28 (Fashion-MNIST, tiny too) or 3×32×32 (revvit too).
    cfg.model.input =
        cfg.model.arch != config::model_arch::revvit && revnet_preset(flags.arch).in_channels == 1
            ? std::vector<int>{1, 28, 28}
            : std::vector<int>{3, 32, 32};
  }
  if (flags.classes > 0) cfg.model.num_classes = flags.classes;
  if (!flags.input.empty()) {
    if (flags.input.size() != 3) throw std::invalid_argument("--input takes C,H,W (three numbers)");
    cfg.model.input = flags.input;
  }
  if (!flags.stem.empty()) {
    if (cfg.model.arch == config::model_arch::revvit)
      throw config::config_error("--stem " + flags.stem +
                                 ": the model is revvit, whose stem is its patch embedding (model.patch); "
                                 "--stem chooses a RevNet's");
    cfg.model.stem = parse_flag<config::stem_kind>("--stem", flags.stem);
  }
  if (flags.micro_batch > 0) cfg.training.micro_batch = flags.micro_batch;
  if (flags.accumulation > 0) cfg.training.accumulation = flags.accumulation;
  return cfg;
}

}  // namespace

int model_info_command(const std::string& config, const std::vector<std::string>& sets,
                       const model_flags& flags) {
  try {
    const config::run_config cfg = load_with_flags(config, sets, flags);
    auto be = make_cpu_backend(1);
    const model_profile m = profile(cfg, *be);
    std::printf("model %s: input %d×%d×%d, %d classes, %zu stages, micro-batch %d\n", m.spec.name().c_str(),
                m.spec.in_channels(), m.spec.height(), m.spec.width(), m.spec.num_classes(), m.stages.size(),
                cfg.training.micro_batch);
    const bool aux = aux_head_size(cfg, m.stages.front(), m.stages.size() == 1, *be).first > 0;
    std::printf("%-6s %-22s %-10s %12s  %-32s %12s%s\n", "stage", "blocks", "reversible", "params",
                "input (one micro-batch)", "input MB", aux ? "   aux params" : "");
    int64_t total = 0, aux_total = 0;
    for (std::size_t j = 0; j < m.stages.size(); ++j) {
      const stage_profile& s = m.stages[j];
      total += s.params;
      std::printf("%-6zu %-22s %-10s %12lld  %-32s %12.2f", j + 1, s.name.c_str(),
                  s.reversible ? "yes" : "no", static_cast<long long>(s.params), s.input.str().c_str(),
                  s.input.numel() * 4 / 1e6);
      if (aux) {
        const int64_t a = aux_head_size(cfg, s, j + 1 == m.stages.size(), *be).first;
        aux_total += a;
        std::printf(" %12lld", static_cast<long long>(a));
      }
      std::printf("\n");
    }
    std::printf("total trainable parameters: %lld\n", static_cast<long long>(total));
    if (aux)
      std::printf("auxiliary heads (forward_gradient, aux_width %d; trained, not part of the model): %lld\n",
                  cfg.training.forward_gradient.aux_width, static_cast<long long>(aux_total));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "petra model-info: " << e.what() << "\n";
    return 2;
  }
}

int memory_model_command(const std::string& config, const std::vector<std::string>& sets,
                         const model_flags& flags) {
  try {
    const config::run_config cfg = load_with_flags(config, sets, flags);
    auto be = make_cpu_backend(1);
    const model_profile m = profile(cfg, *be);
    const int k = cfg.training.accumulation;
    std::printf("memory model: %s, input %d×%d×%d, micro-batch %d, k = %d, J = %zu\n", m.spec.name().c_str(),
                m.spec.in_channels(), m.spec.height(), m.spec.width(), cfg.training.micro_batch, k,
                m.stages.size());
    const char* names[] = {"PipeDream-like", "DSP-like", "reversible+stash", "PETRA"};
    const bool bf = backward_first(cfg);
    const auto rows = memory_table(m.stages, k, cfg.runtime.inversion_sample_every, bf);
    // A small model's rows in GB would all read 0.0: below 1 GB the table is in MB.
    double largest = 0;
    for (const auto& r : rows) largest = std::max({largest, r.paper_gb, r.runtime_gb});
    const bool in_mb = largest < 1.0;
    const double scale = in_mb ? 1e3 : 1.0;
    std::printf("%-14s %-14s %-22s %12s %14s\n", "input buffer", "weight stash", "method",
                in_mb ? "paper (MB)" : "paper (GB)", in_mb ? "petra (MB)" : "petra (GB)");
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::printf(in_mb ? "%-14s %-14s %-22s %12.3f %14.3f\n" : "%-14s %-14s %-22s %12.1f %14.2f\n",
                  rows[i].stash_inputs ? "yes" : "no", rows[i].stash_weights ? "yes" : "no", names[i],
                  rows[i].paper_gb * scale, rows[i].runtime_gb * scale);
    std::printf(
        "paper: docs/design.md §2 convention (one stream per input, doubled for downsampling "
        "stages, 4 bytes).\n"
        "petra: weights + gradients + %s + BN statistics + input FIFO peak %s (both streams)\n"
        "       (reversible stages: the inputs sampled for the inversion error, 1 in %d micro-batches)\n"
        "       + weight copies for every version an outstanding forward used.\n",
        optimizer_state_name(cfg), bf ? "2(J-j), the last stage 1 (tick order backward_first)" : "2(J-j)+1",
        cfg.runtime.inversion_sample_every);
    const bool rebuilds =
        cfg.training.method == config::training_method::petra ||
        (cfg.training.method == config::training_method::delayed && !cfg.training.stash_inputs);
    if (rebuilds) {
      std::printf(
          "\nadaptive fallback (training.max_inversion_error%s): a stage that rebuilds its inputs keeps\n"
          "them while its rebuilds drift, holding beyond its PETRA bytes (MB):\n",
          cfg.training.max_inversion_error > 0 ? " set" : ", off here");
      std::printf("%-6s %-22s %12s %12s\n", "stage", "blocks", "rebuilding", "+ keeping");
      const std::size_t J = m.stages.size();
      int64_t extra = 0;
      for (std::size_t j = 0; j < J; ++j) {
        const stage_profile& s = m.stages[j];
        if (!s.reversible) continue;
        const int64_t plain =
            runtime_stage_bytes(s, j, J, false, false, k, cfg.runtime.inversion_sample_every, bf);
        const int64_t more = fallback_stage_bytes(s, j, J, k, cfg.runtime.inversion_sample_every, bf);
        extra += more;
        std::printf("%-6zu %-22s %12.2f %12.2f\n", j + 1, s.name.c_str(), plain / 1e6, more / 1e6);
      }
      std::printf("every rebuilding stage keeping at once: + %.3f GB\n", extra / 1e9);
    }
    if (cfg.training.method == config::training_method::forward_gradient) {
      const bool local = cfg.training.forward_gradient.target == config::gradient_target::local;
      std::printf("\nper stage, petra's bytes (MB): PETRA beside %s\n",
                  method_for(cfg.training).str().c_str());
      std::printf("%-6s %-22s %12s %18s\n", "stage", "blocks", "PETRA", "forward_gradient");
      const std::size_t J = m.stages.size();
      int64_t petra_total = 0, fg_total = 0;
      for (std::size_t j = 0; j < J; ++j) {
        const stage_profile& s = m.stages[j];
        const auto [aux_params, aux_buffers] = aux_head_size(cfg, s, j + 1 == J, *be);
        const int64_t petra =
            runtime_stage_bytes(s, j, J, !s.reversible, false, k, cfg.runtime.inversion_sample_every, bf);
        const int64_t fg = forward_gradient_stage_bytes(s, j, J, aux_params, aux_buffers, local);
        petra_total += petra, fg_total += fg;
        std::printf("%-6zu %-22s %12.2f %18.2f\n", j + 1, s.name.c_str(), petra / 1e6, fg / 1e6);
      }
      std::printf("%-6s %-22s %12.2f %18.2f\n", "total", "", petra_total / 1e6, fg_total / 1e6);
      std::printf(
          "forward_gradient: weights + gradients + %s + BN statistics of the stage and its\n"
          "auxiliary head, and per forward awaiting its backward (%s) the kept input and the guess.\n",
          optimizer_state_name(cfg),
          local ? "1: local target" : "J-j+2 at the peak for stage j from 1, 1 at the last stage");
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "petra memory-model: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace petra::app
