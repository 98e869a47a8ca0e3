// Convolution algorithms, chosen once per process for each key: GPU, shape, direction, data type,
// math mode, determinism, workspace cap, search and recorded table. Every backend asks here the
// first time it meets a shape (its conv_plan then keeps the answer).
//
// Why a choice cannot differ where bits must agree (runtime.deterministic):
// - Within a process, the first backend that needs a key chooses under the registry's lock, and
//   every later backend of the process takes that same choice: every stage of lockstep and of
//   simulate, an overlapped rebuild's second backend, a stage rebuilt after a recovery. So two
//   runs in one process pick identical algorithms for identical shapes, timed or not, whichever
//   runs first and however the timings came out.
// - Across processes (a `petra node` beside the same stage in-process, a run repeated later),
//   timing can rank two close candidates either way. So `automatic` resolves to the heuristic
//   order under runtime.deterministic: cudnnGet*Algorithm_v7 is a function of the descriptors, the
//   GPU model and the cuDNN version, no measurement, as before timing existed. `timed` may still be
//   asked for with runtime.deterministic (the fastest deterministic candidate): identical within
//   the process; across processes only when each loads the same recorded file.
// - A recorded file (runtime.cudnn_algorithms) is taken before any search, so a run that loads it
//   repeats the recorded run's algorithms wherever that run chose one; each entry is checked on
//   this GPU as the search checks a candidate (it runs, fits the workspace cap, is deterministic
//   when asked, in bf16 forms its products directly) and refused with the file's name otherwise.
#pragma once

#include <string>
#include <vector>

#include "compute/conv_algorithms.hpp"
#include "compute/cuda/dnn_descriptors.hpp"

namespace petra::cuda {

class device_context;

/// The direction's two device inputs, as the convolution call will read them (elements of the
/// plan's data type), complete or queued on the context's stream: forward x and w, backward-data
/// w and dy, backward-filter x and dy. A timed search runs every candidate on them.
struct conv_operands {
  const void* first = nullptr;
  const void* second = nullptr;
};

/// The algorithm of direction `d` for `plan` under `policy` on `ctx`'s GPU: this process's earlier
/// choice for the same key, else the recorded table's entry (checked), else policy.search's.
/// A timed search waits for `ctx`'s stream, runs each qualifying candidate once into scratch
/// memory (cudnnFind*AlgorithmEx) and keeps the fastest; where it cannot run (no memory for its
/// workspace, a cuDNN error) the heuristic order decides and the record says why.
conv_algorithm choose_algorithm(device_context& ctx, const conv_plan& plan, conv_direction d,
                                const conv_policy& policy, const conv_operands& operands);

/// The key of `plan`'s direction `d` on GPU `device` under `policy`, as the record writes it (the
/// choice fields left at their defaults).
conv_algorithm_record record_key(int device, conv_direction d, const conv_plan& plan,
                                 const conv_policy& policy);

/// The choices made so far with search `search` and recorded table `recorded` (compared by path),
/// each key once, in the order chosen.
std::vector<conv_algorithm_record> registry_choices(conv_search search, const conv_algorithm_table* recorded);

/// cuDNN's math types by the names the record uses: fma, default, tensor_op (and
/// tensor_op_allow_conversion, which no choice has).
const char* math_name(cudnnMathType_t math);
/// The math type named `name`; false for another name.
bool parse_math_name(const std::string& name, cudnnMathType_t& out);

}  // namespace petra::cuda
