// The CPU backend's construction and its memory ops (host buffers, deep copies).
#include "compute/cpu/cpu_backend.hpp"

#include <cstring>
#include <stdexcept>

#include "compute/cpu/conv2d_engine.hpp"
#include "compute/cpu/host_pool.hpp"
#include "compute/cpu/parallel.hpp"
#include "compute/gaussian.hpp"
#include "compute/op_checks.hpp"

namespace petra {

namespace {

// Idle pooled memory kept for reuse; a training step's working set of large
// activations fits well below this on the small presets the CPU runs.
constexpr std::size_t max_idle_pool_bytes = std::size_t{1} << 30;

}  // namespace

cpu_backend::cpu_backend(int threads, math_precision precision) : threads_(threads), precision_(precision) {
  if (threads < 1)
    throw std::invalid_argument("make_cpu_backend: threads = " + std::to_string(threads) +
                                ", expected at least 1 (the number of compute threads)");
  pool_ = host_pool::create(max_idle_pool_bytes);
  // bf16_emulated rounds the operands itself and runs the fp32 convolutions, direct ones: its error
  // bound counts exact products of rounded operands, which Winograd's transforms do not keep. Its
  // rounded weights are a fresh copy per call, so the engine keeps no converted weights there.
  conv_ = std::make_unique<conv2d_engine>(threads, precision == math_precision::bf16,
                                          precision == math_precision::fp32,
                                          precision != math_precision::bf16_emulated);
}

cpu_backend::~cpu_backend() = default;

std::string cpu_backend::name() const {
  const std::string math = rounds_to_bf16(precision_) ? std::string(", ") + to_string(precision_) : "";
  return "cpu (oneDNN, " + std::to_string(threads_) + " threads" + math + ")";
}

tensor cpu_backend::output(const shape_t& shape) { return pool_->empty(shape); }

tensor cpu_backend::empty_impl(const shape_t& shape) { return output(shape); }

tensor cpu_backend::zeros_impl(const shape_t& shape) {
  tensor t = output(shape);
  if (t.numel()) std::memset(t.data(), 0, t.bytes());
  return t;
}

tensor cpu_backend::from_host_impl(const tensor& host) {
  tensor copy = output(host.shape());
  if (host.numel()) std::memcpy(copy.data(), host.data(), host.bytes());
  return copy;
}

// On the CPU the device is the host: both directions are the same deep copy.
tensor cpu_backend::to_host_impl(const tensor& t) { return from_host_impl(t); }

void cpu_backend::copy_impl(const tensor& src, tensor& dst) {
  forget_staged_dy();
  if (src.numel() && src.data() != dst.data()) std::memmove(dst.data(), src.data(), src.bytes());
}

void cpu_backend::fill_zero_impl(tensor& t) {
  forget_staged_dy();
  if (t.numel()) std::memset(t.data(), 0, t.bytes());
}

// The pairs are independent (compute/gaussian.hpp): any split over the threads draws the same bits.
tensor cpu_backend::gaussian_impl(const shape_t& shape, uint64_t key) {
  tensor t = empty_impl(shape);
  float* x = t.data();
  const int64_t n = t.numel(), pairs = (n + 1) / 2;
  // A pair costs about as much as 16 elements of an elementwise loop (a hash, a log, a sine, a cosine).
#pragma omp parallel for num_threads(cpu::team_for(16 * pairs, threads_)) schedule(static)
  for (int64_t k = 0; k < pairs; ++k) {
    float first, second;
    gaussian_pair(key, k, first, second);
    x[2 * k] = first;
    if (2 * k + 1 < n) x[2 * k + 1] = second;
  }
  return t;
}

void cpu_backend::synchronize_impl() {}

tensor cpu_backend::export_for_impl(const tensor& t, const device&) {
  return t;  // host memory: any consumer can read it, a GPU or sim backend uploads it on import
}

tensor cpu_backend::import_impl(const tensor& t) {
  if (t.where().type != device_type::cpu)
    fail_op("import",
            "the tensor " + t.shape_str() + " lives on " + t.where().str() +
                ": the backend that made it must export it for cpu (export_for) before it is sent here");
  return t;
}

std::unique_ptr<backend> make_cpu_backend(int threads, math_precision precision) {
  return std::make_unique<cpu_backend>(threads, precision);
}

}  // namespace petra
