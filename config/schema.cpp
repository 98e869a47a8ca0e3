// The YAML layout of run_config: each key is the struct field's name, listed here once.
#include "config/schema.hpp"

#include <algorithm>

namespace petra::config::detail {

section schema(run_config& config) {
  model_config& model = config.model;
  data_config& data = config.data;
  training_config& training = config.training;
  optimizer_config& optimizer = training.optimizer;
  schedule_config& schedule = training.schedule;
  forward_gradient_config& forward_gradient = training.forward_gradient;
  pipeline_config& pipeline = config.pipeline;
  runtime_config& runtime = config.runtime;
  output_config& output = config.output;
  return section{
      "",
      {},
      {
          {"model",
           {{"arch", &model.arch},
            {"num_classes", &model.num_classes},
            {"input", &model.input},
            {"stem", &model.stem},
            {"block", &model.block},
            {"stem_width", &model.stem_width},
            {"widths", &model.widths},
            {"hidden", &model.hidden},
            {"blocks", &model.blocks},
            {"depth", &model.depth},
            {"width", &model.width},
            {"heads", &model.heads},
            {"patch", &model.patch},
            {"mlp_ratio", &model.mlp_ratio}},
           {}},
          {"data",
           {{"dataset", &data.dataset},
            {"path", &data.path},
            {"mean", &data.mean},
            {"std", &data.std},
            {"crop_padding", &data.crop_padding},
            {"flip", &data.flip},
            {"crop_size", &data.crop_size},
            {"resize_size", &data.resize_size},
            {"workers", &data.workers},
            {"on_bad_image", &data.on_bad_image},
            {"train_limit", &data.train_limit},
            {"test_limit", &data.test_limit}},
           {}},
          {"training",
           {{"method", &training.method},
            {"stash_inputs", &training.stash_inputs},
            {"stash_weights", &training.stash_weights},
            {"epochs", &training.epochs},
            {"micro_batch", &training.micro_batch},
            {"accumulation", &training.accumulation},
            {"drain_at_epoch_end", &training.drain_at_epoch_end},
            {"bn_recalibration", &training.bn_recalibration},
            {"tick_order", &training.tick_order},
            {"max_inversion_error", &training.max_inversion_error},
            {"seed", &training.seed}},
           {{"optimizer",
             {{"kind", &optimizer.kind},
              {"base_lr", &optimizer.base_lr},
              {"momentum", &optimizer.momentum, optimizer.kind == optimizer_kind::sgd},
              {"nesterov", &optimizer.nesterov, optimizer.kind == optimizer_kind::sgd},
              {"betas", &optimizer.betas, optimizer.kind == optimizer_kind::adamw},
              {"eps", &optimizer.eps, optimizer.kind == optimizer_kind::adamw},
              {"weight_decay", &optimizer.weight_decay}},
             {}},
            {"schedule",
             {{"kind", &schedule.kind},
              {"warmup_epochs", &schedule.warmup_epochs},
              {"milestones", &schedule.milestones},
              {"gamma", &schedule.gamma}},
             {}},
            {"forward_gradient",
             {{"guess", &forward_gradient.guess},
              {"target", &forward_gradient.target},
              {"aux_width", &forward_gradient.aux_width}},
             {},
             nullptr,
             training.method == training_method::forward_gradient}}},
          {"pipeline",
           {{"stage_blocks", &pipeline.stage_blocks},
            {"devices", &pipeline.devices},
            {"threads", &pipeline.threads},
            {"stages", &pipeline.stages},
            {"nodes", &pipeline.nodes},
            {"spare_nodes", &pipeline.spare_nodes},
            {"rebalance", &pipeline.rebalance},
            {"rebalance_margin", &pipeline.rebalance_margin},
            {"migrate", &pipeline.migrate}},
           {}},
          {"runtime",
           {{"mode", &runtime.mode},
            {"threads", &runtime.threads},
            {"credits", &runtime.credits},
            {"pacing", &runtime.pacing},
            {"precision", &runtime.precision},
            {"deterministic", &runtime.deterministic},
            {"cudnn_search", &runtime.cudnn_search},
            {"cudnn_algorithms", &runtime.cudnn_algorithms},
            {"inversion_sample_every", &runtime.inversion_sample_every},
            {"sim_latency_us", &runtime.sim_latency_us},
            {"overlap_rebuild", &runtime.overlap_rebuild},
            {"overlap_rebuild_threads", &runtime.overlap_rebuild_threads},
            {"pin_threads", &runtime.pin_threads},
            {"heartbeat_timeout", &runtime.heartbeat_timeout}},
           {}},
          {"tls", {{"cert", &config.tls.cert}, {"key", &config.tls.key}, {"ca", &config.tls.ca}}, {}},
          {"faults",
           {{"forward_delay", &config.faults.forward_delay},
            {"backward_delay", &config.faults.backward_delay},
            {"jitter_ms", &config.faults.jitter_ms},
            {"drop", &config.faults.drop},
            {"duplicate", &config.faults.duplicate},
            {"reorder", &config.faults.reorder},
            {"slow", &config.faults.slow},
            {"crash_at_tick", &config.faults.crash_at_tick},
            {"drop_burst", &config.faults.drop_burst},
            {"drop_burst_at_tick", &config.faults.drop_burst_at_tick},
            {"kill_node", &config.faults.kill_node},
            {"seed", &config.faults.seed},
            {"max_restarts", &config.faults.max_restarts},
            {"recovery", &config.faults.recovery},
            {"stall_seconds", &config.faults.stall_seconds}},
           {}},
          {"output",
           {{"dir", &output.dir},
            {"name", &output.name},
            {"checkpoint_every_steps", &output.checkpoint_every_steps},
            {"progress", &output.progress},
            {"metrics_every_steps", &output.metrics_every_steps},
            {"trace", &output.trace},
            {"trace_steps", &output.trace_steps}},
           {}},
          {"testing",
           {{"rebalance_moves", &config.testing.rebalance_moves},
            {"sim_skip_import_wait", &config.testing.sim_skip_import_wait}},
           {}},
          {"nodes", {}, {}, &config.nodes},
      }};
}

section node_schema(node_config& node) {
  return section{
      "", {{"address", &node.address}, {"cert", &node.cert}, {"key", &node.key}, {"ca", &node.ca}}, {}};
}

field* find_field(section& s, const std::string& key) {
  auto it = std::find_if(s.fields.begin(), s.fields.end(), [&](const field& f) { return f.key == key; });
  return it == s.fields.end() ? nullptr : &*it;
}

section* find_section(section& s, const std::string& key) {
  auto it =
      std::find_if(s.sections.begin(), s.sections.end(), [&](const section& c) { return c.key == key; });
  return it == s.sections.end() ? nullptr : &*it;
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string origin::place(const YAML::Mark& mark) const {
  if (!has_lines) return name;
  // yaml-cpp's marks are 0-based; an empty document has line -1.
  return name + ":" + std::to_string(mark.line >= 0 ? mark.line + 1 : 1);
}

std::string origin::where(const YAML::Mark& mark) const { return (has_lines ? "at " : "in ") + place(mark); }

std::string known_keys(const section& s) {
  std::string keys;
  auto add = [&keys](const std::string& key) { keys += (keys.empty() ? "" : ", ") + key; };
  for (const field& f : s.fields) add(f.key);
  for (const section& child : s.sections) add(child.key);
  return keys;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_key(const section& s, const std::string& key) {
  std::string best;
  size_t best_distance = 3;  // more than two edits away is not a typo
  auto consider = [&](const std::string& candidate) {
    size_t d = edit_distance(key, candidate);
    if (d < best_distance) best_distance = d, best = candidate;
  };
  for (const field& f : s.fields) consider(f.key);
  for (const section& child : s.sections) consider(child.key);
  return best;
}

config_error unknown_key(const section& s, const std::string& path, const std::string& key,
                         const origin& from, const YAML::Mark& mark) {
  const std::string guess = closest_key(s, key);
  const std::string hint = guess.empty() ? "" : " (did you mean '" + guess + "'?)";
  if (path.empty())
    return config_error("unknown key '" + key + "' at top level " + (from.has_lines ? "of " : "in ") +
                        from.place(mark) + hint + "; known keys: " + known_keys(s));
  return config_error("unknown key '" + join_path(path, key) + "' " + from.where(mark) + hint +
                      "; known keys in " + path + ": " + known_keys(s));
}

}  // namespace petra::config::detail

namespace petra::config {
namespace {

void list_choices(const detail::section& s, const std::string& path,
                  std::vector<std::pair<std::string, std::string>>& out) {
  for (const detail::field& f : s.fields)
    std::visit(
        [&](auto* value) {
          using value_type = std::remove_pointer_t<decltype(value)>;
          if constexpr (is_choice<value_type>::value)
            out.emplace_back(detail::join_path(path, f.key), choice_list<value_type>());
        },
        f.value);
  for (const detail::section& child : s.sections)
    list_choices(child, detail::join_path(path, child.key), out);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> choice_keys() {
  run_config defaults;
  std::vector<std::pair<std::string, std::string>> out;
  list_choices(detail::schema(defaults), "", out);
  return out;
}

}  // namespace petra::config
