// Precondition checks shared by the CPU ops: a failure throws std::invalid_argument
// whose message names the op, the tensor, its shape and what was expected.
#pragma once

#include <stdexcept>
#include <string>

#include "compute/tensor.hpp"

namespace petra::cpu {

[[noreturn]] inline void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

/// `t` is defined, on the host and has the rank of `layout`, e.g. "(N, C, H, W)".
inline void require_host(const char* op, const char* name, const tensor& t, std::size_t rank,
                         const char* layout) {
  if (!t.defined()) fail(op, std::string(name) + " is undefined: pass a tensor " + layout);
  if (t.where().type != device_type::cpu)
    fail(op, std::string(name) + " lives on " + t.where().str() +
                 ": the CPU backend takes host tensors; move it with to_host first");
  if (t.rank() != rank)
    fail(op, std::string(name) + " " + t.shape_str() + " has rank " + std::to_string(t.rank()) +
                 ", expected " + layout);
}

inline void require_same_shape(const char* op, const char* name_a, const tensor& a, const char* name_b,
                               const tensor& b) {
  if (a.shape() != b.shape())
    fail(op, std::string(name_a) + " " + a.shape_str() + " and " + name_b + " " + b.shape_str() +
                 " must have the same shape");
}

/// A per-channel vector of `channels` entries (γ, β, bias, running statistics).
inline void require_vector(const char* op, const char* name, const tensor& t, int64_t channels,
                           const char* of) {
  require_host(op, name, t, 1, "(C)");
  if (t.dim(0) != channels)
    fail(op, std::string(name) + " " + t.shape_str() + " has " + std::to_string(t.dim(0)) + " entries but " +
                 of + " has " + std::to_string(channels));
}

}  // namespace petra::cpu
