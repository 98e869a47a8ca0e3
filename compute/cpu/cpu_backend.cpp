// The CPU backend's construction and its memory ops (host buffers, deep copies).
#include "compute/cpu/cpu_backend.hpp"

#include <cstring>
#include <stdexcept>

#include "compute/cpu/checks.hpp"
#include "compute/cpu/conv2d_engine.hpp"
#include "compute/cpu/host_pool.hpp"

namespace petra {

using cpu::fail;

namespace {

// Idle pooled memory kept for reuse; a training step's working set of large
// activations fits well below this on the small presets the CPU runs.
constexpr std::size_t max_idle_pool_bytes = std::size_t{1} << 30;

}  // namespace

cpu_backend::cpu_backend(int threads) : threads_(threads) {
  if (threads < 1)
    throw std::invalid_argument("make_cpu_backend: threads = " + std::to_string(threads) +
                                ", expected at least 1 (the number of compute threads)");
  pool_ = host_pool::create(max_idle_pool_bytes);
  conv_ = std::make_unique<conv2d_engine>(threads);
}

cpu_backend::~cpu_backend() = default;

std::string cpu_backend::name() const { return "cpu (oneDNN, " + std::to_string(threads_) + " threads)"; }

tensor cpu_backend::output(const shape_t& shape) { return pool_->empty(shape); }

tensor cpu_backend::empty(const shape_t& shape) { return output(shape); }

tensor cpu_backend::zeros(const shape_t& shape) {
  tensor t = output(shape);
  if (t.numel()) std::memset(t.data(), 0, t.bytes());
  return t;
}

tensor cpu_backend::from_host(const tensor& host) {
  if (!host.defined()) fail("from_host", "the tensor is undefined: nothing to copy");
  if (host.where().type != device_type::cpu)
    fail("from_host",
         "the tensor " + host.shape_str() + " lives on " + host.where().str() + ", not on the host");
  tensor copy = output(host.shape());
  if (host.numel()) std::memcpy(copy.data(), host.data(), host.bytes());
  return copy;
}

tensor cpu_backend::to_host(const tensor& t) {
  if (!t.defined()) fail("to_host", "the tensor is undefined: nothing to copy");
  if (t.where().type != device_type::cpu)
    fail("to_host", "the tensor " + t.shape_str() + " lives on " + t.where().str() +
                        ": the CPU backend only copies its own (host) tensors");
  tensor copy = output(t.shape());
  if (t.numel()) std::memcpy(copy.data(), t.data(), t.bytes());
  return copy;
}

void cpu_backend::copy(const tensor& src, tensor& dst) {
  cpu::require_host("copy", "src", src, src.rank(), "on the host");
  cpu::require_host("copy", "dst", dst, dst.rank(), "on the host");
  cpu::require_same_shape("copy", "src", src, "dst", dst);
  if (src.numel() && src.data() != dst.data()) std::memmove(dst.data(), src.data(), src.bytes());
}

void cpu_backend::fill_zero(tensor& t) {
  cpu::require_host("fill_zero", "t", t, t.rank(), "on the host");
  if (t.numel()) std::memset(t.data(), 0, t.bytes());
}

void cpu_backend::synchronize() {}

tensor cpu_backend::export_for(const tensor& t, const device& consumer) {
  if (t.defined() && t.where().type != device_type::cpu)
    fail("export_for", "the tensor " + t.shape_str() + " for " + consumer.str() + " lives on " +
                           t.where().str() +
                           ", not on the host: only the backend that made it can export it");
  return t;  // host memory: any consumer can read it, a GPU or sim backend uploads it on import
}

tensor cpu_backend::import(const tensor& t) {
  if (t.defined() && t.where().type != device_type::cpu)
    fail("import",
         "the tensor " + t.shape_str() + " lives on " + t.where().str() +
             ": the backend that made it must export it for cpu (export_for) before it is sent here");
  return t;
}

std::unique_ptr<backend> make_cpu_backend(int threads) { return std::make_unique<cpu_backend>(threads); }

}  // namespace petra
