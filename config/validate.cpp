// Checks a parsed run_config: every value in range, every name one of its choices, and the combinations
// that only make sense together. A failure names the YAML path and where the value came from.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "config/decimal.hpp"
#include "config/validate_checker.hpp"

namespace petra::config::detail {
namespace {

int dataset_channels(dataset_kind dataset) {
  return dataset == dataset_kind::fashion_mnist || dataset == dataset_kind::mnist ? 1 : 3;
}

void validate_model(const model_config& model, const checker& check) {
  check.at_least("model.num_classes", model.num_classes, 2, "a classifier needs at least 2 classes");
  if (model.input.size() != 3)
    check.fail("model.input", "expected 3 entries [C, H, W], got " + std::to_string(model.input.size()));
  check.entries_positive("model.input", model.input);
  check.at_least("model.stem_width", model.stem_width, 0,
                 "0 means the preset's width, otherwise it must be positive");
  check.entries_positive("model.widths", model.widths);
  check.entries_positive("model.hidden", model.hidden);
  check.entries_positive("model.blocks", model.blocks);
  check.same_length("model.blocks", model.blocks.size(), "model.widths", model.widths.size());
  check.same_length("model.hidden", model.hidden.size(), "model.widths", model.widths.size());
  for (const auto& [path, value] :
       {std::pair{"model.depth", model.depth}, std::pair{"model.width", model.width},
        std::pair{"model.heads", model.heads}, std::pair{"model.patch", model.patch}})
    check.at_least(std::string(path), value, 0, "0 means revvit's own, otherwise it must be positive");
  if (!(model.mlp_ratio >= 0) || !std::isfinite(model.mlp_ratio))
    check.fail("model.mlp_ratio",
               "got " + show(model.mlp_ratio) + "; 0 means revvit's own (4), otherwise it must be positive");
  // Each family's keys shape that family only: a key of the other, given a value, is refused, not
  // ignored (0, "" and [] are every key's "not given", as a run's config.yaml writes them).
  const bool vit = model.arch == model_arch::revvit;
  const std::pair<const char*, bool> vit_keys[] = {{"model.depth", model.depth != 0},
                                                   {"model.width", model.width != 0},
                                                   {"model.heads", model.heads != 0},
                                                   {"model.patch", model.patch != 0},
                                                   {"model.mlp_ratio", model.mlp_ratio != 0}};
  for (const auto& [key, given] : vit_keys)
    if (!vit && given)
      check.fail(key, "is a key of model.arch revvit but model.arch is '" + to_string(model.arch) + "' " +
                          check.where("model.arch") + ": set model.arch to revvit, or remove this key");
  const std::pair<const char*, bool> revnet_keys[] = {
      {"model.stem", model.stem != stem_kind::preset}, {"model.block", model.block != block_kind::preset},
      {"model.stem_width", model.stem_width != 0},     {"model.widths", !model.widths.empty()},
      {"model.hidden", !model.hidden.empty()},         {"model.blocks", !model.blocks.empty()}};
  for (const auto& [key, given] : revnet_keys)
    if (vit && given)
      check.fail(key, std::string("is a key of the RevNet archs but model.arch is 'revvit' ") +
                          check.where("model.arch") +
                          ": a RevViT is shaped by model.depth, width, heads, patch and mlp_ratio; remove "
                          "this key");
}

void validate_data(const data_config& data, const model_config& model, const checker& check) {
  if (data.path.empty())
    check.fail("data.path", "is empty; name the directory holding the " + to_string(data.dataset) + " files");
  const int channels = dataset_channels(data.dataset);
  if (model.input[0] != channels)
    check.fail("model.input", "has " + std::to_string(model.input[0]) + " channels but " +
                                  to_string(data.dataset) + " (data.dataset " + check.where("data.dataset") +
                                  ") images have " + std::to_string(channels));
  if (data.mean.empty()) check.fail("data.mean", "is empty; give one mean per input channel");
  if (data.std.empty()) check.fail("data.std", "is empty; give one standard deviation per input channel");
  if (data.mean.size() != static_cast<size_t>(channels))
    check.fail("data.mean", "has " + std::to_string(data.mean.size()) + " entries but the images have " +
                                std::to_string(channels) + " channels; give one per channel");
  if (data.std.size() != data.mean.size())
    check.fail("data.std", "has " + std::to_string(data.std.size()) + " entries but data.mean " +
                               check.where("data.mean") + " has " + std::to_string(data.mean.size()));
  check.entries_positive("data.std", data.std);
  check.at_least("data.crop_padding", data.crop_padding, 0, "0 turns random cropping off");
  check.at_least("data.crop_size", data.crop_size, 1, "the side of the square images the model sees");
  if (data.resize_size < data.crop_size)
    check.fail("data.resize_size",
               "got " + std::to_string(data.resize_size) + " but data.crop_size " +
                   check.where("data.crop_size") + " is " + std::to_string(data.crop_size) +
                   "; the eval center crop is cut from the image resized to this size, so it must"
                   " be at least the crop size (the usual pair is 256 and 224)");
  if (data.dataset == dataset_kind::imagenet &&
      (model.input[1] != data.crop_size || model.input[2] != data.crop_size))
    check.fail("model.input", "is " + std::to_string(model.input[0]) + "×" + std::to_string(model.input[1]) +
                                  "×" + std::to_string(model.input[2]) +
                                  " but imagenet images are cropped to data.crop_size " +
                                  check.where("data.crop_size") + " = " + std::to_string(data.crop_size) +
                                  "; set model.input to [3, " + std::to_string(data.crop_size) + ", " +
                                  std::to_string(data.crop_size) + "] or change data.crop_size");
  check.at_least("data.workers", data.workers, 0,
                 "the number of loader threads decoding ahead; 0 decodes on the loader's own thread");
  check.at_least<int64_t>("data.train_limit", data.train_limit, 0, "0 means every image");
  check.at_least<int64_t>("data.test_limit", data.test_limit, 0, "0 means every image");
}

bool is_node_name(const std::string& name) { return name == "local" || is_host_port(name); }

// Said after a pipeline.nodes or spare_nodes entry that is neither an address nor a defined name.
std::string or_a_defined_name(const node_map& nodes) {
  return ", or a name defined in nodes: (" + known_node_names(nodes) + ")";
}

void validate_pipeline(const pipeline_config& pipeline, const node_map& nodes, const checker& check) {
  check.entries_positive("pipeline.stage_blocks", pipeline.stage_blocks);
  if (!pipeline.stage_blocks.empty() && !pipeline.devices.empty() &&
      pipeline.stage_blocks.size() != pipeline.devices.size())
    check.fail("pipeline.devices", "has " + std::to_string(pipeline.devices.size()) + " entries but " +
                                       "pipeline.stage_blocks " + check.where("pipeline.stage_blocks") +
                                       " makes " + std::to_string(pipeline.stage_blocks.size()) +
                                       " stages; give one per stage");
  check.entries_positive("pipeline.threads", pipeline.threads);
  if (!pipeline.stage_blocks.empty() && !pipeline.threads.empty() &&
      pipeline.stage_blocks.size() != pipeline.threads.size())
    check.fail("pipeline.threads", "has " + std::to_string(pipeline.threads.size()) + " entries but " +
                                       "pipeline.stage_blocks " + check.where("pipeline.stage_blocks") +
                                       " makes " + std::to_string(pipeline.stage_blocks.size()) +
                                       " stages: give one per stage");
  for (size_t i = 0; i < pipeline.nodes.size(); ++i)
    if (!is_node_name(pipeline.nodes[i]) && nodes.count(pipeline.nodes[i]) == 0)
      check.fail("pipeline.nodes",
                 "entry " + std::to_string(i) + " is '" + pipeline.nodes[i] +
                     "'; a node is local or host:port of a running `petra node` (port 1-65535)" +
                     or_a_defined_name(nodes));
  if (!pipeline.stage_blocks.empty() && !pipeline.nodes.empty() &&
      pipeline.stage_blocks.size() != pipeline.nodes.size())
    check.fail("pipeline.nodes", "has " + std::to_string(pipeline.nodes.size()) + " entries but " +
                                     "pipeline.stage_blocks " + check.where("pipeline.stage_blocks") +
                                     " makes " + std::to_string(pipeline.stage_blocks.size()) +
                                     " stages: give one per stage");
  check.at_least("pipeline.stages", pipeline.stages, 0,
                 "the number of stages to cut the model into by measured cost; 0 = pipeline.stage_blocks");
  if (pipeline.stages > 0) {
    if (!pipeline.stage_blocks.empty())
      check.fail("pipeline.stages",
                 "is " + std::to_string(pipeline.stages) + " and pipeline.stage_blocks " +
                     check.where("pipeline.stage_blocks") +
                     " is given too: give the cut, or the number of stages to cut by cost");
    for (const auto& [key, size] :
         {std::pair<const char*, std::size_t>{"pipeline.devices", pipeline.devices.size()},
          {"pipeline.threads", pipeline.threads.size()},
          {"pipeline.nodes", pipeline.nodes.size()}})
      if (size != 0 && size != static_cast<std::size_t>(pipeline.stages))
        check.fail(key, "has " + std::to_string(size) + " entries but pipeline.stages " +
                            check.where("pipeline.stages") + " is " + std::to_string(pipeline.stages) +
                            ": give one per stage");
  }
}

// Forced moves are checked against the partition and the run's points when the run is prepared (the
// block count and the micro-batches per epoch come from the model and the data).
void validate_rebalance(const pipeline_config& pipeline, const testing_config& testing,
                        const checker& check) {
  if (!(pipeline.rebalance_margin >= 0 && pipeline.rebalance_margin <= 1))
    check.fail("pipeline.rebalance_margin",
               "got " + show(pipeline.rebalance_margin) +
                   "; the fraction of the busiest stage's time a move must save: in [0, 1] (1: never move)");
  const auto& moves = testing.rebalance_moves;
  if (!moves.empty() && !pipeline.rebalance)
    check.fail("testing.rebalance_moves", "lists moves but pipeline.rebalance " +
                                              check.where("pipeline.rebalance") +
                                              " is false: set it to true, or remove the moves");
  for (size_t i = 0; i < moves.size(); ++i) {
    if (moves[i].from - moves[i].to != 1 && moves[i].to - moves[i].from != 1)
      check.fail("testing.rebalance_moves", "entry " + std::to_string(i) + " (" + moves[i].str() +
                                                ") moves a block between stages that are not neighbours");
    if (moves[i].position < 1)
      check.fail("testing.rebalance_moves",
                 "entry " + std::to_string(i) + " (" + moves[i].str() +
                     ") is at position 0: nothing has been measured before the first micro-batch");
    if (i > 0 && moves[i].position <= moves[i - 1].position)
      check.fail("testing.rebalance_moves",
                 "entry " + std::to_string(i) + " (" + moves[i].str() +
                     ") does not follow the previous one: at most one move per point, positions ascending");
  }
}

// Stages and positions against the model and the data are checked when the run is prepared.
void validate_migrate(const pipeline_config& pipeline, const node_map& nodes, const checker& check) {
  const auto& entries = pipeline.migrate;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string entry = "entry " + std::to_string(i) + " (" + entries[i].str() + ")";
    if (entries[i].position < 1)
      check.fail("pipeline.migrate", entry + " is at position 0: a run starts where its stages were placed");
    if (i > 0 && entries[i].position < entries[i - 1].position)
      check.fail("pipeline.migrate", entry + " comes before the previous one: positions ascending");
    const std::string& node = entries[i].to.node;
    if (!is_node_name(node) && nodes.count(node) == 0)
      check.fail("pipeline.migrate", entry + " names node '" + node +
                                         "'; a node is local or host:port of a running `petra node`" +
                                         or_a_defined_name(nodes));
  }
}

void validate_runtime(const runtime_config& runtime, const checker& check) {
  check.at_least("runtime.threads", runtime.threads, 1, "at least one compute thread is needed");
  check.at_least("runtime.credits", runtime.credits, 0,
                 "0 means 2J - 1, else the most micro-batches in flight");
  check.at_least("runtime.inversion_sample_every", runtime.inversion_sample_every, 0, "0 means never");
  check.at_least("runtime.sim_latency_us", runtime.sim_latency_us, 0, "0 means no added latency");
  check.at_least("runtime.overlap_rebuild_threads", runtime.overlap_rebuild_threads, 0,
                 "0 means as many as the stage's own threads, else the rebuild's threads");
  if (!(runtime.heartbeat_timeout > 0) || !std::isfinite(runtime.heartbeat_timeout))
    check.fail("runtime.heartbeat_timeout",
               "got " + show(runtime.heartbeat_timeout) +
                   "; seconds a remote node may stay silent before it is declared lost: must be positive");
}

// The fallback decides on the rebuilds' sampled errors: it needs a stage that rebuilds, and samples.
void validate_fallback(const training_config& training, const runtime_config& runtime, const checker& check) {
  const char* path = "training.max_inversion_error";
  check.at_least(path, training.max_inversion_error, 0.0, "0 turns the fallback off, else a relative error");
  if (training.max_inversion_error == 0) return;
  if (training.method == training_method::backprop)
    check.fail(path, "is set but training.method " + check.where("training.method") +
                         " is backprop, whose stages keep their tape and rebuild nothing: remove this key");
  if (training.stash_inputs)
    check.fail(path, "is set but training.stash_inputs " + check.where("training.stash_inputs") +
                         " keeps every stage's inputs already, so none rebuilds: remove one of the two");
  if (runtime.inversion_sample_every == 0)
    check.fail(path,
               "is set but runtime.inversion_sample_every " + check.where("runtime.inversion_sample_every") +
                   " is 0: the fallback decides on the sampled inversion errors; sample them (e.g. 50)");
}

void validate_output(const output_config& output, const checker& check) {
  if (output.dir.empty())
    check.fail("output.dir", "is empty; name the parent directory of run directories (e.g. runs)");
  if (output.name.find('/') != std::string::npos)
    check.fail("output.name", "'" + output.name + "' contains '/'; it names one directory inside output.dir");
  check.at_least("output.checkpoint_every_steps", output.checkpoint_every_steps, 0,
                 "0 means at epoch ends only");
  check.at_least("output.metrics_every_steps", output.metrics_every_steps, 0, "0 means no step lines");
  if (output.trace_steps.size() != 2 || output.trace_steps[0] < 0 ||
      output.trace_steps[1] < output.trace_steps[0])
    check.fail("output.trace_steps",
               "expected [first, last]: two micro-batch numbers of the run, 0 <= first <= last");
}

}  // namespace

void validate_tls(const tls_config& tls, const checker& check) {
  if (!tls.enabled()) return;
  for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"tls.cert", tls.cert},
                                   {"tls.key", tls.key},
                                   {"tls.ca", tls.ca}})
    if (value.empty())
      check.fail(
          key, "is empty but other tls keys are set: TLS needs a certificate, its key and the CA, all three");
}

void validate_faults(const faults_config& faults, const pipeline_config& pipeline, const node_map& nodes,
                     const checker& check) {
  for (const auto& [path, list] :
       {std::pair<const char*, const std::vector<int>&>{"faults.forward_delay", faults.forward_delay},
        {"faults.backward_delay", faults.backward_delay},
        {"faults.jitter_ms", faults.jitter_ms}})
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i] < 0)
        check.fail(
            path, "entry " + std::to_string(i) + " is " + std::to_string(list[i]) + "; a delay is 0 or more");
  for (const auto& [path, list] :
       {std::pair<const char*, const std::vector<double>&>{"faults.drop", faults.drop},
        {"faults.duplicate", faults.duplicate},
        {"faults.reorder", faults.reorder}})
    for (size_t i = 0; i < list.size(); ++i)
      if (!(list[i] >= 0 && list[i] <= 1))
        check.fail(path,
                   "entry " + std::to_string(i) + " is " + show(list[i]) + "; a probability is in [0, 1]");
  for (size_t i = 0; i < faults.slow.size(); ++i)
    if (!(faults.slow[i] >= 1))
      check.fail("faults.slow", "entry " + std::to_string(i) + " is " + show(faults.slow[i]) +
                                    "; a slow-down factor is 1 (none) or more");
  for (size_t i = 0; i < faults.crash_at_tick.size(); ++i)
    if (faults.crash_at_tick[i] < -1)
      check.fail("faults.crash_at_tick", "entry " + std::to_string(i) + " is " +
                                             std::to_string(faults.crash_at_tick[i]) +
                                             "; -1 means never, else a tick from 0");
  for (size_t i = 0; i < faults.drop_burst.size(); ++i)
    if (faults.drop_burst[i] < 0)
      check.fail("faults.drop_burst", "entry " + std::to_string(i) + " is " +
                                          std::to_string(faults.drop_burst[i]) +
                                          "; a burst is 0 (none) or more messages");
  for (size_t i = 0; i < faults.drop_burst_at_tick.size(); ++i) {
    const int at = faults.drop_burst_at_tick[i];
    const int burst = i < faults.drop_burst.size() ? faults.drop_burst[i] : 0;
    if (at < -1)
      check.fail("faults.drop_burst_at_tick", "entry " + std::to_string(i) + " is " + std::to_string(at) +
                                                  "; -1 means never, else a tick from 0");
    else if (at >= 0 && burst <= 0)
      check.fail("faults.drop_burst_at_tick", "entry " + std::to_string(i) + " is " + std::to_string(at) +
                                                  " but faults.drop_burst has no burst for stage " +
                                                  std::to_string(i + 1) + ": set both");
  }
  for (size_t i = 0; i < faults.drop_burst.size(); ++i)
    if (faults.drop_burst[i] > 0 &&
        (i >= faults.drop_burst_at_tick.size() || faults.drop_burst_at_tick[i] < 0))
      check.fail("faults.drop_burst", "entry " + std::to_string(i) + " is " +
                                          std::to_string(faults.drop_burst[i]) +
                                          " but faults.drop_burst_at_tick has no tick for stage " +
                                          std::to_string(i + 1) + ": set both");
  for (size_t i = 0; i < faults.kill_node.size(); ++i) {
    const std::string& k = faults.kill_node[i];
    const auto at = k.rfind('@');
    const std::string node = at == std::string::npos ? "" : k.substr(0, at);
    bool ok = at != std::string::npos && node != "local" && (is_node_name(node) || nodes.count(node) > 0);
    ok = ok && decimal_seconds(k.substr(at + 1)) >= 0;  // as the pipeline reads it
    if (!ok)
      check.fail(
          "faults.kill_node",
          "entry " + std::to_string(i) + " is '" + k +
              "'; write node@seconds with a node as host:port or a name of nodes:, e.g. 127.0.0.1:7001@2.5");
  }
  for (size_t i = 0; i < pipeline.spare_nodes.size(); ++i)
    if ((!is_node_name(pipeline.spare_nodes[i]) && nodes.count(pipeline.spare_nodes[i]) == 0) ||
        pipeline.spare_nodes[i] == "local")
      check.fail("pipeline.spare_nodes", "entry " + std::to_string(i) + " is '" + pipeline.spare_nodes[i] +
                                             "'; a spare is host:port of a running `petra node`" +
                                             or_a_defined_name(nodes));
  check.at_least("faults.max_restarts", faults.max_restarts, 0, "0 means a failure ends the run");
  check.at_least("faults.stall_seconds", faults.stall_seconds, 1, "at least one second");
}

void validate(const run_config& config, const source_map& sources) {
  const checker check(sources);
  validate_model(config.model, check);
  validate_data(config.data, config.model, check);
  validate_training(config.training, check);
  validate_model_method(config.model, config.training, check);
  validate_nodes(config.nodes, sources);
  validate_pipeline(config.pipeline, config.nodes, check);
  validate_rebalance(config.pipeline, config.testing, check);
  validate_migrate(config.pipeline, config.nodes, check);
  validate_runtime(config.runtime, check);
  validate_fallback(config.training, config.runtime, check);
  validate_output(config.output, check);
  validate_tls(config.tls, check);
  validate_faults(config.faults, config.pipeline, config.nodes, check);
}

}  // namespace petra::config::detail
