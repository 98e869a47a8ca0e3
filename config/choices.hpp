// The named choices of a config, each an enum with one table of names: the loader parses with it,
// the writer and messages print with it, and the command line lists it. Adding a choice is one
// entry in its table.
#pragma once

#include <array>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace petra::config {

/// A bad config: `where` is the YAML path (training.micro_batch) and, when known, file:line.
class config_error : public std::runtime_error {
 public:
  explicit config_error(const std::string& message) : std::runtime_error(message) {}
};

/// Who runs the schedule: the reference simulator (one thread) or the actor runtimes.
enum class runtime_mode { simulate, lockstep, async };
/// The training method of docs/design.md §1 (the stash switches refine `delayed`; training.forward_gradient
/// refines `forward_gradient`).
enum class training_method { backprop, delayed, petra, forward_gradient };
/// training.forward_gradient.guess: the direction G̃_j a stage projects its gradient on — its
/// auxiliary head's local-loss gradient, or Gaussian noise.
enum class gradient_guess { local, random };
/// training.forward_gradient.target: the gradient projected on the guess — the global loss's (through
/// forward mode to the loss) or the local loss's own (greedy local learning).
enum class gradient_target { global, local };
/// The network preset of model.arch: RevNets, or revvit (a reversible vision transformer shaped by
/// model.depth, width, heads, patch and mlp_ratio).
enum class model_arch { revnet18, revnet34, revnet50, fashion_small, tiny, revvit };
/// model.stem and model.block: `preset` keeps the arch's own.
enum class stem_kind { preset, cifar, imagenet };
enum class block_kind { preset, basic, bottleneck };
/// data.dataset: the files data.path holds.
enum class dataset_kind { fashion_mnist, mnist, cifar10, imagenet32, imagenet };
/// data.on_bad_image: an unreadable ImageNet file is skipped (and logged) or ends the run.
enum class bad_image_policy { skip, fail };
/// training.optimizer.kind: SGD with momentum/Nesterov, or AdamW (decoupled weight decay).
enum class optimizer_kind { sgd, adamw };
/// training.schedule.kind: the learning rate after warm-up.
enum class lr_schedule { cosine, step, constant };
/// training.tick_order: within a tick, a stage's forward first (both with the weights the tick
/// starts with, docs/design.md §1) or its backward and optimizer step first.
enum class tick_order { forward_first, backward_first };
/// runtime.pacing (async): stages bound their own lead (2(J−j)+1 awaiting backward) or only the
/// loader's credits do.
enum class async_pacing { stages, loader };
/// runtime.precision: how every stage's convolutions and GEMMs round their operands: fp32, TF32
/// tensor-core math (GPU stages; CPU and sim stages compute in fp32), bf16 operands with fp32 sums
/// (a CPU needs AVX512-BF16 or AMX), or bf16's rounding on fp32 kernels (any CPU).
enum class compute_precision { fp32, tf32, bf16, bf16_emulated };
/// runtime.cudnn_search: how GPU stages find each convolution shape's algorithms: auto (timed, but
/// cuDNN's heuristic order under runtime.deterministic, so that other processes pick the same),
/// cuDNN's heuristic order, or every qualifying candidate timed once on the real operands.
enum class cudnn_search_mode { automatic, heuristic, timed };
/// faults.recovery: rebuild only the lost stages where the runtime can, or roll every stage back.
enum class recovery_scope { local, global };

/// The names of an enum's values, as written in a config.
template <class Choice>
struct choice_names;

template <class Choice, std::size_t N>
using name_table = std::array<std::pair<const char*, Choice>, N>;

template <>
struct choice_names<runtime_mode> {
  static constexpr name_table<runtime_mode, 3> table = {{{"simulate", runtime_mode::simulate},
                                                         {"lockstep", runtime_mode::lockstep},
                                                         {"async", runtime_mode::async}}};
};
template <>
struct choice_names<training_method> {
  static constexpr name_table<training_method, 4> table = {
      {{"backprop", training_method::backprop},
       {"delayed", training_method::delayed},
       {"petra", training_method::petra},
       {"forward_gradient", training_method::forward_gradient}}};
};
template <>
struct choice_names<gradient_guess> {
  static constexpr name_table<gradient_guess, 2> table = {
      {{"local", gradient_guess::local}, {"random", gradient_guess::random}}};
};
template <>
struct choice_names<gradient_target> {
  static constexpr name_table<gradient_target, 2> table = {
      {{"global", gradient_target::global}, {"local", gradient_target::local}}};
};
template <>
struct choice_names<model_arch> {
  static constexpr name_table<model_arch, 6> table = {{{"revnet18", model_arch::revnet18},
                                                       {"revnet34", model_arch::revnet34},
                                                       {"revnet50", model_arch::revnet50},
                                                       {"fashion_small", model_arch::fashion_small},
                                                       {"tiny", model_arch::tiny},
                                                       {"revvit", model_arch::revvit}}};
};
template <>
struct choice_names<stem_kind> {
  static constexpr name_table<stem_kind, 3> table = {
      {{"", stem_kind::preset}, {"cifar", stem_kind::cifar}, {"imagenet", stem_kind::imagenet}}};
};
template <>
struct choice_names<block_kind> {
  static constexpr name_table<block_kind, 3> table = {
      {{"", block_kind::preset}, {"basic", block_kind::basic}, {"bottleneck", block_kind::bottleneck}}};
};
template <>
struct choice_names<dataset_kind> {
  static constexpr name_table<dataset_kind, 5> table = {{{"fashion-mnist", dataset_kind::fashion_mnist},
                                                         {"mnist", dataset_kind::mnist},
                                                         {"cifar10", dataset_kind::cifar10},
                                                         {"imagenet32", dataset_kind::imagenet32},
                                                         {"imagenet", dataset_kind::imagenet}}};
};
template <>
struct choice_names<bad_image_policy> {
  static constexpr name_table<bad_image_policy, 2> table = {
      {{"skip", bad_image_policy::skip}, {"fail", bad_image_policy::fail}}};
};
template <>
struct choice_names<optimizer_kind> {
  static constexpr name_table<optimizer_kind, 2> table = {
      {{"sgd", optimizer_kind::sgd}, {"adamw", optimizer_kind::adamw}}};
};
template <>
struct choice_names<lr_schedule> {
  static constexpr name_table<lr_schedule, 3> table = {
      {{"cosine", lr_schedule::cosine}, {"step", lr_schedule::step}, {"constant", lr_schedule::constant}}};
};
template <>
struct choice_names<tick_order> {
  static constexpr name_table<tick_order, 2> table = {
      {{"forward_first", tick_order::forward_first}, {"backward_first", tick_order::backward_first}}};
};
template <>
struct choice_names<async_pacing> {
  static constexpr name_table<async_pacing, 2> table = {
      {{"stages", async_pacing::stages}, {"loader", async_pacing::loader}}};
};
template <>
struct choice_names<compute_precision> {
  static constexpr name_table<compute_precision, 4> table = {
      {{"fp32", compute_precision::fp32},
       {"tf32", compute_precision::tf32},
       {"bf16", compute_precision::bf16},
       {"bf16_emulated", compute_precision::bf16_emulated}}};
};
template <>
struct choice_names<cudnn_search_mode> {
  static constexpr name_table<cudnn_search_mode, 3> table = {{{"auto", cudnn_search_mode::automatic},
                                                              {"heuristic", cudnn_search_mode::heuristic},
                                                              {"timed", cudnn_search_mode::timed}}};
};
template <>
struct choice_names<recovery_scope> {
  static constexpr name_table<recovery_scope, 2> table = {
      {{"local", recovery_scope::local}, {"global", recovery_scope::global}}};
};

/// Whether `Choice` is one of the enums above (the loader and the writer handle them alike).
template <class Choice, class = void>
struct is_choice : std::false_type {};
template <class Choice>
struct is_choice<Choice, std::void_t<decltype(choice_names<Choice>::table)>> : std::true_type {};

/// The name of `value` as written in a config.
template <class Choice>
std::string to_string(Choice value) {
  for (const auto& [name, v] : choice_names<Choice>::table)
    if (v == value) return name;
  throw std::logic_error("a choice value without a name");
}

/// "cosine, step, constant" (an empty name shows as ""), for messages and --help.
template <class Choice>
std::string choice_list() {
  std::string listed;
  for (const auto& [name, v] : choice_names<Choice>::table)
    listed += (listed.empty() ? "" : ", ") + (*name ? std::string(name) : std::string("\"\""));
  return listed;
}

/// The value named `text`; throws config_error listing the choices otherwise.
template <class Choice>
Choice parse_choice(const std::string& text) {
  for (const auto& [name, value] : choice_names<Choice>::table)
    if (text == name) return value;
  throw config_error("'" + text + "' is not one of " + choice_list<Choice>());
}

inline runtime_mode parse_runtime_mode(const std::string& name) { return parse_choice<runtime_mode>(name); }
inline training_method parse_training_method(const std::string& name) {
  return parse_choice<training_method>(name);
}

}  // namespace petra::config
