// Convolution algorithm choices as plain data: how a GPU backend searches for them
// (runtime.cudnn_search), what it chose, and a recorded file's choices to repeat
// (runtime.cudnn_algorithms; training/conv_algorithm_file.hpp reads and writes the file). No cuDNN
// types here, so every layer may hold them; header-only, as both petra_compute and the CUDA
// backend use it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace petra {

/// How a GPU backend picks each convolution shape's algorithm, once per shape and direction
/// (compute/cuda/conv_algorithm_registry.hpp says why `automatic` is heuristic when deterministic).
enum class conv_search {
  automatic,  // timed, but heuristic under runtime.deterministic
  heuristic,  // the first qualifying candidate in cuDNN's heuristic order
  timed,      // every qualifying candidate run once on the real operands, the fastest kept
};

inline const char* to_string(conv_search s) {
  switch (s) {
    case conv_search::automatic:
      return "auto";
    case conv_search::heuristic:
      return "heuristic";
    case conv_search::timed:
      return "timed";
  }
  return "?";
}

/// The search a backend runs: `automatic` resolved against runtime.deterministic.
inline conv_search resolved(conv_search s, bool deterministic) {
  if (s != conv_search::automatic) return s;
  return deterministic ? conv_search::heuristic : conv_search::timed;
}

/// The three directions' names as the record writes them.
inline const std::array<const char*, 3>& conv_direction_names() {
  static const std::array<const char*, 3> names = {"forward", "backward_data", "backward_filter"};
  return names;
}

/// cuDNN 9's algorithms per direction (CUDNN_CONVOLUTION_{FWD,BWD_DATA,BWD_FILTER}_ALGO_COUNT; the
/// CUDA backend checks at compile time that they match); 0 for an unknown direction.
inline int conv_algorithm_count(const std::string& direction) {
  if (direction == "forward") return 8;
  if (direction == "backward_data") return 6;
  if (direction == "backward_filter") return 7;
  return 0;
}

/// One convolution's algorithm for one direction on one GPU: the key, then the choice.
struct conv_algorithm_record {
  // --- the key ---
  int device = 0;               // cuda:N
  std::string direction;        // forward | backward_data | backward_filter
  std::array<int64_t, 4> x{};   // N, C, H, W
  std::array<int64_t, 4> w{};   // K, C, R, S
  int stride = 1, padding = 0;  //
  std::string data;             // fp32 | bf16: the element type cuDNN reads and writes
  std::string math_mode;        // fp32 | tf32 | bf16: the backend's (bf16_emulated computes as fp32)
  bool deterministic = false;   // runtime.deterministic
  // --- the choice ---
  int algorithm = 0;             // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t of the direction
  std::string math;              // fma | default | tensor_op: the cudnnMathType_t it was found with
  uint64_t workspace_bytes = 0;  //
  std::string source;            // timed | heuristic | recorded (with a reason when timing fell back)
  double time_ms = -1;           // timed: cuDNN's time for it on the real operands; else -1

  bool same_key(const conv_algorithm_record& o) const {
    return device == o.device && direction == o.direction && x == o.x && w == o.w && stride == o.stride &&
           padding == o.padding && data == o.data && math_mode == o.math_mode &&
           deterministic == o.deterministic;
  }
  /// "cuda:0 forward x (128, 64, 32, 32) w (64, 64, 3, 3) stride 1 padding 1 fp32 data, tf32 math,
  /// deterministic", for messages.
  std::string key_str() const {
    auto dims = [](const std::array<int64_t, 4>& d) {
      return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ", " +
             std::to_string(d[3]) + ")";
    };
    return "cuda:" + std::to_string(device) + " " + direction + " x " + dims(x) + " w " + dims(w) +
           " stride " + std::to_string(stride) + " padding " + std::to_string(padding) + " " + data +
           " data, " + math_mode + " math" + (deterministic ? ", deterministic" : "");
  }
};

/// A recorded file's choices (runtime.cudnn_algorithms), each key once.
struct conv_algorithm_table {
  std::string path;  // where they were read from, for messages and to tell tables apart
  std::vector<conv_algorithm_record> entries;

  const conv_algorithm_record* find(const conv_algorithm_record& key) const {
    for (const conv_algorithm_record& e : entries)
      if (e.same_key(key)) return &e;
    return nullptr;
  }
};

}  // namespace petra
