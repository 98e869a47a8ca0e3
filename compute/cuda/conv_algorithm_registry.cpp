// The process's convolution algorithm choices (the header says why there is one per process).
#include "compute/cuda/conv_algorithm_registry.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "compute/cuda/checks.hpp"
#include "compute/cuda/device_context.hpp"

namespace petra::cuda {

static_assert(CUDNN_CONVOLUTION_FWD_ALGO_COUNT == 8 && CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT == 6 &&
                  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT == 7,
              "compute/conv_algorithms.hpp's algorithm counts must be this cuDNN's");
static_assert(static_cast<int>(conv_direction::forward) == 0 &&
                  static_cast<int>(conv_direction::backward_data) == 1 &&
                  static_cast<int>(conv_direction::backward_filter) == 2,
              "conv_direction_names() is indexed by conv_direction");

namespace {

struct registry {
  std::mutex mutex;
  std::map<std::string, conv_algorithm> chosen;                        // by the full key
  std::vector<std::pair<std::string, conv_algorithm_record>> records;  // (search context, record), in order
};

registry& the_registry() {
  static registry* r = new registry;  // never destroyed: backends may outlive static destruction
  return *r;
}

/// What, beside the key, decides a choice: the search and the recorded table it starts from.
std::string context_of(conv_search search, const conv_algorithm_table* recorded) {
  return std::string(to_string(search)) + "|" + (recorded ? recorded->path : "");
}

std::size_t output_bytes(const conv_plan& plan, conv_direction d) {
  const conv_geometry& g = plan.geometry;
  int64_t count = 0;
  switch (d) {
    case conv_direction::forward:
      count = g.n * g.k * g.p() * g.q();
      break;
    case conv_direction::backward_data:
      count = g.n * g.c * g.h * g.w;
      break;
    case conv_direction::backward_filter:
      count = g.k * g.c * g.r * g.s;
      break;
  }
  const std::size_t element = plan.data_type == CUDNN_DATA_BFLOAT16 ? 2 : 4;
  return std::max<std::size_t>(static_cast<std::size_t>(count) * element, 256);
}

/// Every candidate that fits the workspace, run once on `operands` into scratch memory, fastest
/// first (cudnnFind*AlgorithmEx); cuDNN lists the others with a failed status.
std::vector<algorithm_candidate> timed_candidates(device_context& ctx, const conv_plan& plan,
                                                  conv_direction d, const conv_policy& policy,
                                                  const conv_operands& operands,
                                                  const std::vector<algorithm_candidate>& heuristic) {
  // Room for the largest workspace that a candidate which could qualify asks for, within the cap:
  // more would only let cuDNN time algorithms we would refuse.
  std::size_t workspace_bytes = 0;
  for (const algorithm_candidate& c : heuristic) {
    bool tf32_only = false;
    if (refusal(d, c, policy, &tf32_only).empty()) workspace_bytes = std::max(workspace_bytes, c.memory);
  }
  const std::shared_ptr<device_storage> output = ctx.allocate(output_bytes(plan, d));
  const std::shared_ptr<device_storage> workspace = workspace_bytes ? ctx.allocate(workspace_bytes) : nullptr;
  // The operands complete and the scratch memory allocated before cuDNN runs anything: it blocks
  // the host and may time on a stream of its own.
  ctx.synchronize();
  plan.conv.set_math(query_math(policy));
  void* ws = workspace ? workspace->data() : nullptr;
  int returned = 0;
  std::vector<algorithm_candidate> out;
  switch (d) {
    case conv_direction::forward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> results(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
      PETRA_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
          ctx.dnn(), plan.x.get(), operands.first, plan.w.get(), operands.second, plan.conv.get(),
          plan.y.get(), output->data(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, results.data(), ws,
          workspace_bytes));
      out = candidates_of(results, returned);
      break;
    }
    case conv_direction::backward_data: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
      PETRA_CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
          ctx.dnn(), plan.w.get(), operands.first, plan.y.get(), operands.second, plan.conv.get(),
          plan.x.get(), output->data(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, results.data(), ws,
          workspace_bytes));
      out = candidates_of(results, returned);
      break;
    }
    case conv_direction::backward_filter: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
      PETRA_CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          ctx.dnn(), plan.x.get(), operands.first, plan.y.get(), operands.second, plan.conv.get(),
          plan.w.get(), output->data(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, results.data(),
          ws, workspace_bytes));
      out = candidates_of(results, returned);
      break;
    }
  }
  ctx.synchronize();  // in case cuDNN left work on the handle's stream: the scratch is freed after it
  return out;
}

/// The workspace algorithm `algo` of `d` needs for `plan` with the descriptor's math type as set;
/// a failed status when cuDNN cannot run it for these descriptors.
cudnnStatus_t workspace_size(cudnnHandle_t handle, const conv_plan& plan, conv_direction d, int algo,
                             std::size_t* bytes) {
  *bytes = 0;
  switch (d) {
    case conv_direction::forward:
      return cudnnGetConvolutionForwardWorkspaceSize(handle, plan.x.get(), plan.w.get(), plan.conv.get(),
                                                     plan.y.get(),
                                                     static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
    case conv_direction::backward_data:
      return cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, plan.w.get(), plan.y.get(), plan.conv.get(), plan.x.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
    case conv_direction::backward_filter:
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, plan.x.get(), plan.y.get(), plan.conv.get(), plan.w.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

/// A recorded entry, checked on this GPU as a candidate of the search would be.
conv_algorithm recorded_choice(device_context& ctx, const conv_plan& plan, conv_direction d,
                               const conv_policy& policy, const conv_algorithm_record& entry,
                               const std::vector<algorithm_candidate>& heuristic) {
  const std::string where = "runtime.cudnn_algorithms: '" + policy.recorded->path + "': the entry for " +
                            entry.key_str() + " (algorithm " + std::to_string(entry.algorithm) + ", math " +
                            entry.math + ")";
  algorithm_candidate c;
  c.algo = entry.algorithm;
  if (c.algo < 0 || c.algo >= conv_algorithm_count(entry.direction) || !parse_math_name(entry.math, c.math))
    throw std::runtime_error(where + " names no algorithm of cuDNN");
  // Its determinism as cuDNN's heuristics list it; an algorithm they do not list counts as not
  // deterministic (unknown), so it is never taken where determinism is asked for.
  bool listed = false;
  c.determinism = CUDNN_NON_DETERMINISTIC;
  for (const algorithm_candidate& h : heuristic)
    if (h.algo == c.algo) {
      c.determinism = h.determinism;
      listed = true;
      break;
    }
  plan.conv.set_math(math_for(policy, c.math));  // the math it will run with
  c.status = workspace_size(ctx.dnn(), plan, d, c.algo, &c.memory);
  bool tf32_only = false;
  std::string why = refusal(d, c, policy, &tf32_only);
  if (!listed && why == "not deterministic")
    why = "cuDNN's heuristics do not list it, so its determinism is unknown";
  if (!why.empty())
    throw std::runtime_error(where + " cannot be used here: " + why +
                             ": record the algorithms again on this GPU and cuDNN, or remove the entry");
  return conv_algorithm{c.algo, c.math, c.memory};
}

}  // namespace

const char* math_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor_op_allow_conversion";
    case CUDNN_FMA_MATH:
      return "fma";
  }
  return "?";
}

bool parse_math_name(const std::string& name, cudnnMathType_t& out) {
  for (cudnnMathType_t m :
       {CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH})
    if (name == math_name(m)) {
      out = m;
      return true;
    }
  return false;
}

conv_algorithm_record record_key(int device, conv_direction d, const conv_plan& plan,
                                 const conv_policy& policy) {
  conv_algorithm_record r;
  r.device = device;
  r.direction = conv_direction_names()[static_cast<std::size_t>(d)];
  const conv_geometry& g = plan.geometry;
  r.x = {g.n, g.c, g.h, g.w};
  r.w = {g.k, g.c, g.r, g.s};
  r.stride = g.stride;
  r.padding = g.padding;
  r.data = plan.data_type == CUDNN_DATA_BFLOAT16 ? "bf16" : "fp32";
  r.math_mode = policy.bf16 ? "bf16" : policy.tf32 ? "tf32" : "fp32";
  r.deterministic = policy.deterministic;
  return r;
}

conv_algorithm choose_algorithm(device_context& ctx, const conv_plan& plan, conv_direction d,
                                const conv_policy& policy, const conv_operands& operands) {
  conv_algorithm_record record = record_key(ctx.index(), d, plan, policy);
  const std::string context = context_of(policy.search, policy.recorded.get());
  const std::string key =
      context + "|" + record.key_str() + "|workspace " + std::to_string(policy.max_workspace_bytes);
  registry& r = the_registry();
  // Held while choosing: a second backend that needs the same key waits and takes this choice.
  std::lock_guard<std::mutex> lock(r.mutex);
  if (auto it = r.chosen.find(key); it != r.chosen.end()) return it->second;
  const std::vector<algorithm_candidate> heuristic = heuristic_candidates(ctx.dnn(), plan, policy, d);
  conv_algorithm chosen;
  const conv_algorithm_record* entry = policy.recorded ? policy.recorded->find(record) : nullptr;
  if (entry) {
    chosen = recorded_choice(ctx, plan, d, policy, *entry, heuristic);
    record.source = "recorded";
  } else if (policy.search == conv_search::timed) {
    std::string failed;
    try {
      const std::vector<algorithm_candidate> timed =
          timed_candidates(ctx, plan, d, policy, operands, heuristic);
      chosen = pick_algorithm(d, timed, policy, plan.geometry);
      record.source = "timed";
      for (const algorithm_candidate& c : timed)
        if (c.algo == chosen.algo && c.math == chosen.math && c.status == CUDNN_STATUS_SUCCESS) {
          record.time_ms = c.time_ms;
          break;
        }
    } catch (const std::exception& e) {
      failed = e.what();
      cudaGetLastError();  // a failed allocation is not sticky: later checks must not see it
    }
    if (!failed.empty()) {
      chosen = pick_algorithm(d, heuristic, policy, plan.geometry);
      record.source = "heuristic (timing failed: " + failed.substr(0, 300) + ")";
    }
  } else {
    chosen = pick_algorithm(d, heuristic, policy, plan.geometry);
    record.source = "heuristic";
  }
  record.algorithm = chosen.algo;
  record.math = math_name(chosen.math);
  record.workspace_bytes = chosen.workspace_bytes;
  r.chosen.emplace(key, chosen);
  r.records.emplace_back(context, record);
  return chosen;
}

std::vector<conv_algorithm_record> registry_choices(conv_search search,
                                                    const conv_algorithm_table* recorded) {
  const std::string context = context_of(search, recorded);
  registry& r = the_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<conv_algorithm_record> out;
  for (const auto& [c, record] : r.records)
    if (c == context) out.push_back(record);
  return out;
}

}  // namespace petra::cuda
