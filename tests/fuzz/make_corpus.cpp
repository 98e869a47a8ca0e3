// Writes the seed corpus of every fuzz target (tests/fuzz/corpus/<target>/seed-*): small valid
// inputs made by the project's own writers, plus a few broken ones. Findings are added beside them
// by hand (bench/fuzz/run.sh names where libFuzzer put them). Usage: petra_fuzz_make_corpus DIR
#include <caf/binary_serializer.hpp>
#include <caf/event_based_actor.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "compute/serialize/safetensors.hpp"
#include "config/config.hpp"
#include "tests/datasets/dataset_files.hpp"
#include "tests/datasets/image_files.hpp"
#include "tests/datasets/pickle_files.hpp"
#include "tests/fuzz/wire_types.hpp"
#include "training/checkpoint.hpp"

namespace {

using bytes = std::vector<uint8_t>;
namespace fs = std::filesystem;
namespace dt = petra::data::testing;

fs::path corpus_root;

void seed(const std::string& target, const std::string& name, const bytes& content) {
  const fs::path path = corpus_root / target / ("seed-" + name);
  fs::create_directories(path.parent_path());
  dt::write_file(path.string(), content);
}

bytes text_bytes(const std::string& text) { return bytes(text.begin(), text.end()); }

bytes head(const bytes& b, std::size_t n) { return bytes(b.begin(), b.begin() + std::min(n, b.size())); }

bytes file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The idx target's input: 2-byte little-endian labels length, labels file, images file.
bytes idx_pair(const bytes& labels, const bytes& images) {
  bytes out{static_cast<uint8_t>(labels.size() & 0xFF), static_cast<uint8_t>(labels.size() >> 8)};
  out.insert(out.end(), labels.begin(), labels.end());
  out.insert(out.end(), images.begin(), images.end());
  return out;
}

void idx_seeds() {
  const bytes images = dt::idx_bytes(0x803, {3, 4, 4}, dt::pattern_pixels(3, 4, 4));
  const bytes labels = dt::idx_bytes(0x801, {3}, {0, 9, 4});
  seed("idx", "valid", idx_pair(labels, images));
  seed("idx", "valid-gzip", idx_pair(dt::gzip(labels), dt::gzip(images)));
  seed("idx", "truncated-images", idx_pair(labels, head(images, images.size() - 5)));
  seed("idx", "swapped", idx_pair(images, labels));
  seed("idx", "label-out-of-range", idx_pair(dt::idx_bytes(0x801, {3}, {0, 10, 1}), images));
  seed("idx", "huge-dims", idx_pair(labels, dt::idx_bytes(0x803, {0x7FFFFFFF, 0x7FFFFFFF, 2}, {1, 2})));
  seed("idx", "truncated-gzip", idx_pair(labels, head(dt::gzip(images), 20)));
}

void cifar10_seeds() {
  const bytes records = dt::cifar_records({3, 7});
  seed("cifar10", "valid", records);
  seed("cifar10", "valid-gzip", dt::gzip(records));
  seed("cifar10", "truncated", head(records, 3072));
  seed("cifar10", "bad-label", dt::cifar_records({12}));
  seed("cifar10", "empty", {});
}

void imagenet32_seeds() {
  dt::imagenet32_contents contents = dt::imagenet32_batch_contents(2, 5);
  contents.with_mean = false;
  for (const auto& [name, style] : {std::pair{"protocol2-py2", dt::pickle_style::python2_protocol2},
                                    std::pair{"protocol2-py3", dt::pickle_style::python3_protocol2},
                                    std::pair{"protocol3", dt::pickle_style::protocol3},
                                    std::pair{"protocol4", dt::pickle_style::protocol4}})
    seed("imagenet32", name, dt::imagenet32_pickle(contents, style));
  const bytes valid = dt::imagenet32_pickle(contents);
  seed("imagenet32", "truncated", head(valid, valid.size() / 2));
  dt::imagenet32_contents wrong = contents;
  wrong.labels = {0, 1001};
  seed("imagenet32", "labels-out-of-range", dt::imagenet32_pickle(wrong));
  wrong = contents;
  wrong.columns = 3071;
  wrong.pixels.resize(2 * 3071);
  seed("imagenet32", "wrong-shape", dt::imagenet32_pickle(wrong));
}

void jpeg_seeds() {
  seed("jpeg", "rgb", dt::pattern_jpeg(24, 16, dt::jpeg_kind::rgb, 1));
  seed("jpeg", "gray", dt::pattern_jpeg(16, 24, dt::jpeg_kind::gray, 2));
  seed("jpeg", "cmyk", dt::pattern_jpeg(16, 16, dt::jpeg_kind::cmyk, 3));
  const bytes rgb = dt::pattern_jpeg(40, 40, dt::jpeg_kind::rgb, 4, 50);
  seed("jpeg", "truncated", head(rgb, rgb.size() * 2 / 3));
  seed("jpeg", "not-a-jpeg", text_bytes("GIF89a not a jpeg"));
}

void safetensors_and_checkpoint_seeds(const std::string& scratch) {
  const std::string file = scratch + "/seed.safetensors";
  petra::save_safetensors(file,
                          {{"param/w", petra::tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6})},
                           {"buffer/mean", petra::tensor::from_vector({3}, {0.5f, -1, 2})}},
                          {{"note", "seed"}});
  const bytes valid = file_bytes(file);
  seed("safetensors", "valid", valid);
  seed("safetensors", "truncated-data", head(valid, valid.size() - 4));
  seed("safetensors", "header-only", head(valid, 12));
  bytes huge_header = valid;
  huge_header[5] = 0x7F;  // the u64 header length, far beyond the file
  seed("safetensors", "huge-header-length", huge_header);

  const std::string ckpt = scratch + "/checkpoint.safetensors";
  std::vector<petra::stage_snapshot> stages(2);
  for (int j = 0; j < 2; ++j) {
    stages[j].stage = j;
    stages[j].optimizer_steps = 10 + j;
    stages[j].tensors.push_back(
        {"param/w" + std::to_string(j), petra::tensor::from_vector({2}, {1.f * j, 2})});
  }
  petra::write_checkpoint(ckpt, stages, {{"epoch", "1"}, {"position", "0"}});
  bytes two_stages{1};  // the target's first byte: stage count − 1
  const bytes content = file_bytes(ckpt);
  two_stages.insert(two_stages.end(), content.begin(), content.end());
  seed("checkpoint", "two-stages", two_stages);
  two_stages[0] = 2;
  seed("checkpoint", "stage-count-mismatch", two_stages);
  bytes plain{0};
  plain.insert(plain.end(), valid.begin(), valid.end());
  seed("checkpoint", "not-a-checkpoint", plain);
}

void config_seeds() {
  for (const auto& entry : fs::directory_iterator(petra::config::presets_dir()))
    seed("config", "preset-" + entry.path().stem().string(), file_bytes(entry.path().string()));
  seed("config", "resolved-default",
       text_bytes(petra::config::to_yaml(petra::config::load_config("default"))));
  seed("config", "bad-value", text_bytes("training:\n  micro_batch: sixty\n"));
  seed("config", "unknown-key", text_bytes("model: {arch: revnet18, widht: [8]}\n"));
  seed("config", "nodes",
       text_bytes("nodes: {a: {address: 127.0.0.1:7001}}\npipeline: {nodes: [local, a]}\n"));
  seed("config", "syntax-error", text_bytes("model: [arch: {\n"));
}

void set_seeds() {
  seed("set", "epochs", text_bytes("training.epochs=10\noutput.name=petra-10"));
  seed("set", "lists", text_bytes("model.widths=[8,16]\npipeline.nodes=[local,local,127.0.0.1:7001]"));
  seed("set", "choices", text_bytes("runtime.mode=lockstep\ntraining.tick_order=backward_first"));
  seed("set", "faults", text_bytes("faults.backward_delay=[0,0,2,0,0,0,0,0]\nfaults.kill_node=[A@200]"));
  seed("set", "node-entry", text_bytes("nodes.gpu1.address=10.0.0.1:7001\nnodes={b: {address: h:1}}"));
  seed("set", "bad", text_bytes("training.=3\n=\nmodel.arch"));
}

// Each message type's bytes as the binary serializer writes them, behind the target's index byte.
template <std::size_t I>
void message_seed(const petra::tensor& sample) {
  using type = std::tuple_element_t<I, petra::fuzz::wire_types>;
  type value{};
  if constexpr (std::is_same_v<type, petra::tensor>) value = sample;
  if constexpr (std::is_same_v<type, petra::messages::forward_data>) value.x.x1 = sample;
  if constexpr (std::is_same_v<type, petra::messages::cut_part>) value.tensors = {{"param/w", sample}};
  std::vector<char> buffer;
  caf::binary_serializer sink{petra::fuzz::wire_system(), buffer};
  if (sink(value)) throw std::runtime_error("cannot serialize message type " + std::to_string(I));
  bytes out{static_cast<uint8_t>(I)};
  out.insert(out.end(), buffer.begin(), buffer.end());
  seed("messages", "type-" + std::to_string(I), out);
}

/// The index of wire type T in petra::fuzz::wire_types (the target's first byte for it).
template <class T, std::size_t... I>
constexpr std::size_t wire_index(std::index_sequence<I...>) {
  std::size_t found = petra::fuzz::wire_type_count;
  ((std::is_same_v<T, std::tuple_element_t<I, petra::fuzz::wire_types>> ? (found = I, 0) : 0), ...);
  return found;
}

/// One value of a wire type with its fields set, behind the target's index byte of that type.
template <class T>
void typed_seed(const std::string& name, const T& value) {
  constexpr std::size_t index = wire_index<T>(std::make_index_sequence<petra::fuzz::wire_type_count>{});
  static_assert(index < petra::fuzz::wire_type_count, "not a wire type of the messages target");
  std::vector<char> buffer;
  caf::binary_serializer sink{petra::fuzz::wire_system(), buffer};
  if (sink(const_cast<T&>(value))) throw std::runtime_error("cannot serialize seed " + name);
  bytes out{static_cast<uint8_t>(index)};
  out.insert(out.end(), buffer.begin(), buffer.end());
  seed("messages", name, out);
}

/// A whole caf::message as a node receives it, behind the target's index byte for whole messages.
void whole_seed(const std::string& name, caf::message whole) {
  std::vector<char> buffer;
  caf::binary_serializer sink{petra::fuzz::wire_system(), buffer};
  if (sink(whole)) throw std::runtime_error("cannot serialize seed " + name);
  bytes out{static_cast<uint8_t>(petra::fuzz::wire_type_count)};
  out.insert(out.end(), buffer.begin(), buffer.end());
  seed("messages", name, out);
}

/// The fields of recovery, fencing and heartbeats set (not their defaults), so that the replay
/// decodes them as a node meets them: stamps of a rebuilt stage's generation, a recovery order that
/// re-issues, a drop burst, a fenced message's count, the heartbeat and the fence orders.
void recovery_seeds(const petra::tensor& sample) {
  namespace m = petra::messages;
  m::stamp fenced{41, 17, 5, 2, 3, 7};  // micro-batch, tick, weight version, sender, phase, generation
  typed_seed("stamp-generation", fenced);
  m::forward_data forward{fenced, {}};
  forward.x.x1 = sample;
  typed_seed("forward-generation", forward);
  m::backward_data backward{fenced, {}, {}};
  backward.rebuilt.x1 = backward.grad.x1 = sample;
  typed_seed("backward-generation", backward);
  m::recovery_order order;
  order.phase = 3, order.drop_upto = 44, order.forwards_done = 45, order.backwards_done = 38;
  order.cancel = {39, 40, 41, 42};
  order.reissue = {39, 40, 41, 42};
  order.reissue_tick = 263, order.ticks = 273;
  order.tick = 40, order.forward_markers_upto = 41, order.backward_markers_upto = 42;
  order.needs_forward_from = 42, order.needs_backward_from = 43;
  order.abandon_cuts = 263;
  typed_seed("recovery-order-reissue", order);
  m::stage_faults burst;
  burst.drop_burst = 3, burst.drop_burst_at_tick = 10, burst.crash_at_tick = 20;
  typed_seed("stage-faults-burst", burst);
  typed_seed("fault-event-fenced", m::fault_event{2, m::fault_kind::fenced, 7});
  m::phase_plan plan;
  plan.ticks = 263, plan.generation = 7, plan.phase = 3, plan.cut_ticks = {64, 128};
  typed_seed("phase-plan-generation", plan);
  whole_seed("whole-heartbeat", caf::make_message(petra::atoms::heartbeat_atom_v));
  whole_seed("whole-fence", caf::make_message(petra::atoms::fence_atom_v));
  whole_seed("whole-hold", caf::make_message(petra::atoms::hold_atom_v));
  whole_seed("whole-recover", caf::make_message(petra::atoms::recover_atom_v, order));
  whole_seed("whole-forward-generation", caf::make_message(forward));
}

/// The links a stage, the loss actor and the loader are wired with, their counts and generations
/// set: with null handles (decoded in full) and with a handle of a live actor of this process (its
/// node id is this process's; the replay, another process, reads it as another node's handle).
void link_seeds() {
  namespace m = petra::messages;
  typed_seed("credit-return-stage1", m::credit_return{1, 3, 45});
  typed_seed("cut-marker", m::cut_marker{128});
  typed_seed("cut-marker-loader", m::cut_marker{128, true});
  m::stage_links links;
  links.prev_device = petra::device::parse("cuda:0");
  links.next_device = petra::device::parse("sim:1");
  links.count = 8, links.generation = 3, links.prev_generation = 2, links.next_generation = 1;
  typed_seed("stage-links-null-handles", links);
  const caf::actor live =
      petra::fuzz::wire_system().spawn([]() -> caf::behavior { return {[](int32_t) {}}; });
  links.prev = caf::actor_cast<m::backward_sink>(live);
  links.loss = caf::actor_cast<m::loss_actor>(live);
  typed_seed("stage-links-handles", links);
  m::loss_links loss;
  loss.per_epoch = 800, loss.wave_size = 2, loss.last_generation = 4;
  loss.stages = {m::derivatives_sink{}, caf::actor_cast<m::derivatives_sink>(live)};
  typed_seed("loss-links", loss);
  typed_seed("loader-links", m::loader_links{caf::actor_cast<m::forward_sink>(live), m::loss_actor{}, 15});
  whole_seed("whole-stage-links", caf::make_message(links));
}

template <std::size_t... I>
void message_seeds(std::index_sequence<I...>) {
  const petra::tensor sample = petra::tensor::from_vector({2, 2}, {1, 2, 3, 4});
  (message_seed<I>(sample), ...);
  petra::messages::stamp stamp;
  stamp.tick = 7;
  const caf::message whole = caf::make_message(stamp, std::vector<int32_t>{1, 2, 3});
  std::vector<char> buffer;
  caf::binary_serializer sink{petra::fuzz::wire_system(), buffer};
  if (sink(const_cast<caf::message&>(whole))) throw std::runtime_error("cannot serialize a caf::message");
  bytes out{static_cast<uint8_t>(petra::fuzz::wire_type_count)};
  out.insert(out.end(), buffer.begin(), buffer.end());
  seed("messages", "whole-message", out);
  recovery_seeds(sample);
  link_seeds();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  corpus_root = argv[1];
  dt::temp_dir scratch;
  idx_seeds();
  cifar10_seeds();
  imagenet32_seeds();
  jpeg_seeds();
  safetensors_and_checkpoint_seeds(scratch.str());
  config_seeds();
  set_seeds();
  message_seeds(std::make_index_sequence<petra::fuzz::wire_type_count>{});
  std::printf("seed corpus written to %s\n", argv[1]);
  return 0;
}
