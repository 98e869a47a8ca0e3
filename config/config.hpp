// Typed run configuration: every default lives here, once. Parsed from YAML by load_config.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/choices.hpp"

namespace petra::config {

/// Where a stage computes: the CPU, GPU N, or simulated device N (CPU kernels behind a device's rules).
struct device_spec {
  enum class kind { cpu, cuda, sim };
  kind type = kind::cpu;
  int index = 0;
  /// "cpu", "cuda:0", "sim:1".
  std::string str() const;
  bool operator==(const device_spec& other) const { return type == other.type && index == other.index; }
};

/// "cpu", "cuda:0", "sim:1" as a device; a bad name throws config_error saying how to write one.
device_spec parse_device(const std::string& name);

/// A forced move of testing.rebalance_moves: at the rebalancing point before micro-batch `position`
/// of the run (counted from epoch 1's first), the block of stage `from` next to stage `to` moves
/// there (stages 1-based, neighbours).
struct block_move {
  int64_t position = 0;
  int from = 0;
  int to = 0;
  /// "position:from>to", e.g. "64:2>3".
  std::string str() const;
  bool operator==(const block_move& other) const {
    return position == other.position && from == other.from && to == other.to;
  }
};

/// "64:2>3" as a move; bad text throws config_error saying how to write one.
block_move parse_block_move(const std::string& text);

/// Where a migrating stage goes (pipeline.migrate, `petra migrate`): a device, the compute threads
/// there and the process that hosts it. Written DEVICE[/THREADS][@NODE]: "sim:0", "cpu/2",
/// "cpu@127.0.0.1:7001", "cuda:1@gpu1".
struct migration_target {
  device_spec device;
  int threads = 0;             // compute threads of its backend; 0 = as many as the stage has now
  std::string node = "local";  // local | host:port of a `petra node` | a name from nodes:
  std::string str() const;
  bool operator==(const migration_target& other) const {
    return device == other.device && threads == other.threads && node == other.node;
  }
};

/// "sim:0", "cpu/2@gpu1" as a target; bad text throws config_error saying how to write one.
migration_target parse_migration_target(const std::string& text);

/// A scheduled migration of pipeline.migrate: at the drained point before micro-batch `position` of
/// the run (counted from epoch 1's first), stage `stage` (1-based) moves to `to`.
struct stage_migration {
  int64_t position = 0;
  int stage = 0;
  migration_target to;
  /// "position:stage>target", e.g. "32:3>sim:0".
  std::string str() const;
  bool operator==(const stage_migration& other) const {
    return position == other.position && stage == other.stage && to == other.to;
  }
};

/// "32:3>sim:0" as a migration; bad text throws config_error saying how to write one.
stage_migration parse_stage_migration(const std::string& text);

/// The network. `arch` names a RevNet preset (revnet18, revnet34, revnet50, fashion_small, tiny),
/// whose stem, block, stem_width and lists, when given, replace the preset's; or revvit, a reversible
/// vision transformer shaped by depth, width, heads, patch and mlp_ratio (each a key of revvit only).
struct model_config {
  model_arch arch = model_arch::fashion_small;
  int num_classes = 10;
  std::vector<int> input = {1, 28, 28};   // C, H, W
  stem_kind stem = stem_kind::preset;     // "" = the preset's; cifar | imagenet
  block_kind block = block_kind::preset;  // "" = the preset's; basic | bottleneck
  int stem_width = 0;                     // 0 = the preset's stream width after the stem
  std::vector<int> widths;                // stream width per group
  std::vector<int> hidden;                // bottleneck hidden width per group
  std::vector<int> blocks;                // blocks per group
  // revvit: 0 = revvit's own (ViT-S/4 on 32×32: depth 12, width 384, heads 6, patch 4, mlp_ratio 4)
  int depth = 0;         // reversible transformer blocks
  int width = 0;         // features per token in each stream
  int heads = 0;         // attention heads: they divide width
  int patch = 0;         // side of the square patches: it divides the input's H and W
  double mlp_ratio = 0;  // the MLP's hidden width over width
};

struct data_config {
  dataset_kind dataset =
      dataset_kind::fashion_mnist;  // fashion-mnist | mnist | cifar10 | imagenet32 | imagenet
  std::string path = "/usr/share/datasets/fashion-mnist";
  std::vector<float> mean = {0.2860f};  // per channel
  std::vector<float> std = {0.3530f};   // per channel
  int crop_padding = 2;   // random crop to the input size after zero padding; 0 = off (not imagenet)
  bool flip = true;       // random horizontal flip
  int crop_size = 224;    // imagenet: side of the random-resized crop (train) and center crop (eval)
  int resize_size = 256;  // imagenet eval: shorter side resized to this, then the center crop
  int workers = 1;        // loader threads decoding and augmenting ahead; 0 = the loader's own thread
  bad_image_policy on_bad_image =
      bad_image_policy::skip;  // imagenet: skip (serve the next good image, log the file) | fail
  int64_t train_limit = 0;     // use only the first N training images; 0 = all (imagenet: N spread evenly)
  int64_t test_limit = 0;      // use only the first N test images; 0 = all (imagenet: N spread evenly)
};

struct optimizer_config {
  optimizer_kind kind = optimizer_kind::sgd;  // sgd | adamw
  double base_lr = 0.1;                       // lr = base_lr · micro_batch · accumulation / 256 (Goyal)
  double momentum = 0.9;                      // sgd only
  bool nesterov = true;                       // sgd only
  std::vector<double> betas = {0.9, 0.999};   // adamw only: β1, β2
  double eps = 1e-8;                          // adamw only
  double weight_decay = 5e-4;  // on conv and linear weights only (adamw: decoupled, w ·= 1 − lr·wd)
};

struct schedule_config {
  lr_schedule kind = lr_schedule::cosine;  // cosine | step | constant
  double warmup_epochs = 0.5;              // linear warm-up, per optimizer step
  std::vector<double> milestones;          // step: epochs at which lr ×= gamma
  double gamma = 0.1;
};

/// training.forward_gradient: what the forward_gradient method projects on what (refused with any
/// other method).
struct forward_gradient_config {
  gradient_guess guess = gradient_guess::local;      // local (auxiliary head's gradient) | random
  gradient_target target = gradient_target::global;  // global (forward mode to the loss) | local
  // Channels of each auxiliary head's conv3×3. 32 is at least every stage width of the small presets
  // (16-64), so the local classifier is no bottleneck there, and costs a few percent of a stage's
  // compute; wider stages of RevNet-18 get a head narrower than themselves, as in the paper.
  int aux_width = 32;
};

struct training_config {
  training_method method = training_method::petra;  // backprop | delayed | petra | forward_gradient
  bool stash_inputs = false;                        // delayed only: keep every stage's inputs
  bool stash_weights = false;                       // delayed only: keep the weights of each forward
  int epochs = 3;
  int micro_batch = 64;
  int accumulation = 2;             // k: micro-batches averaged per optimizer step
  bool drain_at_epoch_end = false;  // drain the pipeline at each epoch end (and evaluate the drained weights)
  // Drained evaluations: the running BN statistics re-estimated first under the drained weights, from
  // this many micro-batches of the training set (in order, unaugmented); 0 = off (the statistics the
  // training forwards kept, which lag weights that move fast: docs/outputs.md).
  int bn_recalibration = 0;
  // simulate and lockstep: the order of a stage's forward and backward within a tick.
  // forward_first (docs/design.md §1: both use the weights the tick starts with) | backward_first (the
  // backward and its optimizer step first: the forward sees them, one backward less staleness)
  config::tick_order tick_order = config::tick_order::forward_first;
  // Adaptive fallback: a stage that rebuilds its inputs keeps them instead while the moving mean of its
  // last 8 sampled inversion errors exceeds this, until that mean is below half of it; 0 = off.
  double max_inversion_error = 0;
  uint64_t seed = 0;
  optimizer_config optimizer;
  schedule_config schedule;
  forward_gradient_config forward_gradient;
};

/// How the model's blocks (stem, each coupling/downsampling block, head) are cut into stages.
struct pipeline_config {
  std::vector<int> stage_blocks;  // blocks per stage, in order; empty = one block per stage
  // With stage_blocks empty: cut the model into this many stages by each block's measured cost
  // (training/cost_partition.hpp; the run's config.yaml records the cut); 0 = one block per stage.
  int stages = 0;
  std::vector<device_spec> devices;  // per stage: cpu | cuda:N | sim:N; empty = all cpu
  // per stage compute threads; empty = the machine's cores split over the CPU stages (at least 1)
  std::vector<int> threads;
  std::vector<std::string>
      nodes;  // per stage: local | host:port of a `petra node` | a name from nodes:; empty = all local
  std::vector<std::string>
      spare_nodes;  // host:port (or a name from nodes:) of nodes that take over the stages of a lost node
  // Online rebalancing (simulate, lockstep, async): the pipeline drains at every checkpoint_every_steps
  // point and epoch end, and there one block moves from the busiest stage to a neighbour when that
  // lowers the predicted busiest stage's time by more than rebalance_margin (a fraction of it; 1:
  // never, the points still drain).
  bool rebalance = false;
  double rebalance_margin = 0.05;
  // Live migration (lockstep, async): each entry moves a stage to another device, thread count or node at
  // the drained point before its micro-batch (the pipeline drains there).
  std::vector<stage_migration> migrate;
};

/// TLS for connections to nodes beyond loopback (CAF's OpenSSL module): both sides present a
/// certificate signed by `ca`.
struct tls_config {
  std::string cert = "";  // PEM certificate of this process
  std::string key = "";   // its PEM private key
  std::string ca = "";    // PEM CA certificate that signs every peer
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

/// Injected faults, per stage j (lists indexed by stage; missing entries = no fault). Delays are
/// ticks in lockstep and milliseconds in async. Every injected fault is an event in the metrics.
struct faults_config {
  std::vector<int> forward_delay;   // extra delay on the link stage j → j+1
  std::vector<int> backward_delay;  // extra delay on the link stage j+1 → j (into stage j)
  std::vector<int> jitter_ms;       // async: extra uniform 0..jitter ms on stage j's outgoing messages
  std::vector<double> drop;         // probability that a message stage j sends is lost
  std::vector<double> duplicate;    // probability that it is delivered twice
  std::vector<double> reorder;      // async: probability that it is held back behind the next one
  std::vector<double> slow;         // compute slow-down factor of stage j (1 = none)
  std::vector<int> crash_at_tick;   // stage j throws at this tick / forward (async), once per run; -1 = never
  // Stage j loses drop_burst[j] forward messages in a row on its link j → j+1, the first it sends at
  // or after tick drop_burst_at_tick[j] (lockstep) or its forward of that number (async); -1 = never.
  std::vector<int> drop_burst;
  std::vector<int> drop_burst_at_tick;
  std::vector<std::string>
      kill_node;         // "node@seconds" (host:port or a name of nodes:): it exits that long after the start
  uint64_t seed = 1;     // for the random faults
  int max_restarts = 3;  // recoveries (rollbacks and stage-local ones) of one phase before the run gives up
  // local: lockstep and async rebuild only the lost stages where they can | global
  recovery_scope recovery = recovery_scope::local;
  int stall_seconds = 60;  // a phase with no progress this long is a lost message: recover
};

/// A `petra node` the run may place stages on, named in `nodes:` so that pipeline.nodes and
/// pipeline.spare_nodes can say `gpu1` instead of its address.
struct node_config {
  /// host:port where the `petra node` listens (port 1-65535).
  std::string address = "";
  /// The node's own PEM certificate, its private key and the CA that signs its peers, for TLS: what a
  /// launcher passes to the node it starts. All three or none (none = a plain listener).
  std::string cert = "", key = "", ca = "";
};

struct runtime_config {
  runtime_mode mode =
      runtime_mode::simulate;  // simulate (the reference, one thread) | lockstep | async (actors)
  int threads = 2;             // actors: CAF scheduler threads (loader, loss, control; stages own theirs)
  int credits = 0;             // actors: micro-batches in flight at most; 0 = 2J − 1
  async_pacing pacing =
      async_pacing::stages;  // async: stages (stage j forwards while < 2(J−j)+1 await backward) | loader
  // Convolutions and GEMMs: fp32 | tf32 (GPU stages) | bf16 | bf16_emulated (docs/mixed_precision.md)
  compute_precision precision = compute_precision::fp32;
  bool deterministic = false;  // GPU stages: deterministic algorithms only
  // GPU stages: how each convolution shape's algorithms are found, once per process: auto (timed;
  // cuDNN's heuristic order under deterministic) | heuristic | timed (config/choices.hpp)
  cudnn_search_mode cudnn_search = cudnn_search_mode::automatic;
  // GPU stages: a run's cudnn_algorithms.json, whose choices are taken before any search ("" = none)
  std::string cudnn_algorithms = "";
  int inversion_sample_every = 50;  // measure ‖x̃ − x‖/‖x‖ on 1 in N micro-batches; 0 = never
  int sim_latency_us = 0;  // sim:N stages: each op waits this long before it runs (shows a missing wait)
  // Reversible stages: rebuild block i−1's input on a second stream while block i's gradients are
  // computed (PaReprop), and (lockstep, async) start the last block's rebuild from the rebuilt output
  // the stage after sends ahead of its gradient; the same bits either way. Off by default:
  // docs/results/overlap-rebuild.md.
  bool overlap_rebuild = false;
  // CPU stages with overlap_rebuild: the rebuild's threads; 0 = as many as the stage's own
  // (pipeline.threads[j]). Measured (docs/results/overlap-rebuild.md): a rebuild on fewer threads
  // than the gradients makes them wait for it, one on as many gains where cores are spare.
  int overlap_rebuild_threads = 0;
  // lockstep and async: each CPU stage's compute threads pinned to cores of their own (the CPU stages
  // take consecutive cores in stage order, wrapping around when they ask for more than there are)
  bool pin_threads = false;
  // Remote nodes: one silent (no heartbeat answer) this long is lost, like a crashed one. 10 s: the
  // answer comes from a thread of its own on each side, so busy compute threads and GPU kernels do
  // not delay it; only a loaded machine's scheduling and a large tensor ahead of it on the link do
  // (a second or two). Well under faults.stall_seconds (60).
  double heartbeat_timeout = 10;
};

struct output_config {
  std::string dir = "runs";        // parent of the run directory
  std::string name = "";           // run directory name; "" = <preset or config>-<method>-<time>
  int checkpoint_every_steps = 0;  // also checkpoint every N optimizer steps of stage 1; 0 = epoch ends only
  bool progress = true;            // a progress line when stdout is a terminal
  int metrics_every_steps = 0;  // also a {"event":"step"} line every N optimizer steps of stage 1; 0 = none
  bool trace = false;           // write trace.json (Chrome trace format) of the actor runtimes
  // The micro-batches of the run the trace covers, first and last. Left at its default, a shorter
  // run records its last 200 (or all of them); set explicitly, it must start inside the run.
  std::vector<int64_t> trace_steps = {200, 399};
};

/// Switches for tests and experiments, not for training (docs/config.md marks them so).
struct testing_config {
  // Forced block moves replacing online rebalancing's measured rule (with pipeline.rebalance), so
  // that a rebalanced run is deterministic.
  std::vector<block_move> rebalance_moves;
  bool sim_skip_import_wait = false;  // sim:N stages: a received tensor is used without waiting
};

struct run_config {
  model_config model;
  data_config data;
  training_config training;
  pipeline_config pipeline;
  runtime_config runtime;
  output_config output;
  tls_config tls;
  faults_config faults;
  testing_config testing;
  std::map<std::string, node_config> nodes;  // by name ([A-Za-z0-9_-]+, not "local"); empty = none named
  /// Where each value came from, by YAML path ("output.trace_steps" → "at runs/x.yaml:5" or
  /// "in --set output.trace_steps=[0,9]"), filled by the loader; a path that is absent kept its default.
  std::map<std::string, std::string> sources;
};

/// Where `path`'s value came from, for messages: "at runs/x.yaml:5", "in --set ...", or "(default)".
std::string where(const run_config& config, const std::string& path);

/// Whether the user wrote `path` (in the file or a --set) rather than leaving its default.
bool is_set(const run_config& config, const std::string& path);

/// Loads a YAML file (or a preset name from config/presets, e.g. "default"), then applies
/// `overrides` of the form "training.epochs=10". Unknown keys and bad values throw config_error
/// naming the YAML path and line. For the `nodes:` map, "nodes={gpu1: {address: ...}}" replaces the
/// whole map, while "nodes.gpu1.address=..." or "nodes.gpu1={...}" edits one entry, creating it when absent.
run_config load_config(const std::string& path_or_preset, const std::vector<std::string>& overrides = {});

/// The same, from YAML text (`origin` names it in messages).
run_config parse_config(const std::string& yaml_text, const std::string& origin,
                        const std::vector<std::string>& overrides = {});

/// Every key whose value is a named choice, with its names from the choice's table: for --help.
std::vector<std::pair<std::string, std::string>> choice_keys();

/// The resolved config as YAML, loadable again by load_config.
std::string to_yaml(const run_config& config);

/// A key whose value differs between two configs; each value as to_yaml writes it.
struct key_change {
  std::string key;  // "training.epochs"; "nodes" for the map of named nodes as a whole
  std::string before, after;
};

/// Every key whose value differs between `before` and `after`, in the layout's order.
std::vector<key_change> changed_keys(const run_config& before, const run_config& after);

/// The address a pipeline.nodes or pipeline.spare_nodes entry stands for: "local" → "local",
/// host:port → itself, a name of `config.nodes` → that node's address. Throws config_error naming
/// the entry and the known names otherwise.
std::string resolve_node_address(const run_config& config, const std::string& entry);

/// Where the shipped presets live.
std::string presets_dir();

}  // namespace petra::config
