// Tensor serialization: rank, extents, then the payload as one raw block.
#include "messages/serialization.hpp"

#include <sys/mman.h>

#include <atomic>
#include <caf/binary_deserializer.hpp>
#include <caf/sec.hpp>
#include <cstring>
#include <limits>
#include <new>

#include "compute/block_pool.hpp"

namespace petra {
namespace {

// A guard against hostile or corrupt input: no tensor petra sends comes near it.
constexpr uint64_t max_tensor_floats = uint64_t{1} << 32;  // 16 GiB

// A received tensor of this size or more gets pages of its own (mmap), kept for the next tensor of
// its size when it goes. From malloc, a remote stage's activations (MBs each, made on the
// middleman's thread, freed by a stage after its backward) came from an arena whose freed space
// glibc's moving mmap threshold kept handing out in pieces: a `petra node` holding stage 6 of the
// default preset grew from 254 to 905 MB over 1,200 micro-batches; with pages of their own it stayed
// at 220–240 MB. Fresh pages for every tensor, though, fault on the copy into them: in the default
// preset with stages on two nodes on two cores, copies and their page faults were about a third of
// all the CPU time, half of it into received tensors, and recycling their blocks took the run from
// about 250 to about 390 images/s.
constexpr std::size_t own_pages_bytes = 128 * 1024;
// Idle blocks kept for reuse at most (the blocks in use are the stages' to hold; beyond this, a
// block that goes is unmapped): a few micro-batches' activations of the presets.
constexpr std::size_t max_idle_received_bytes = std::size_t{256} << 20;

std::atomic<uint64_t> blocks_mapped{0};

/// Blocks of their own pages, unmapped when the pool does not keep them.
struct mapped_memory {
  using storage_type = storage;
  static constexpr std::size_t min_pooled_bytes = own_pages_bytes;
  static void* allocate(std::size_t bytes) {
    void* block = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) throw std::bad_alloc();
    ++blocks_mapped;
    return block;
  }
  static void release(void* block, std::size_t bytes) { ::munmap(block, bytes); }
  static tensor unpooled(const shape_t& shape) { return tensor::empty(shape); }
};

/// Where received tensors live: one pool for the process (its network thread fills them, the stages
/// that took them free them, from any thread).
tensor received(const shape_t& shape) {
  static const auto pool = block_pool<mapped_memory>::create(max_idle_received_bytes);
  return pool->empty(shape);
}

}  // namespace

uint64_t received_blocks_mapped() { return blocks_mapped; }

caf::error inspect(caf::serializer& f, tensor& x) {
  if (x.defined() && x.where().type != device_type::cpu)
    return caf::make_error(caf::sec::runtime_error, "tensor on " + x.where().str() +
                                                        " cannot be serialized: copy it to the host first");
  uint8_t defined = x.defined() ? 1 : 0;
  std::vector<int64_t> shape = x.defined() ? x.shape() : std::vector<int64_t>{};
  if (auto err = f(caf::meta::type_name("tensor"), defined, shape)) return err;
  if (!defined || x.numel() == 0) return {};
  return f.apply_raw(x.bytes(), x.data());
}

caf::error inspect(caf::deserializer& f, tensor& x) {
  uint8_t defined = 0;
  std::vector<int64_t> shape;
  if (auto err = f(caf::meta::type_name("tensor"), defined, shape)) return err;
  if (!defined) {
    x = tensor{};
    return {};
  }
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && count > max_tensor_floats / static_cast<uint64_t>(d)))
      return caf::make_error(
          caf::sec::invalid_argument,
          "tensor shape " + to_string(shape) + " is negative or larger than 16 GiB: message rejected");
    count *= static_cast<uint64_t>(d);
  }
  // A few bytes claiming a large shape must not make a node allocate gigabytes: where the source
  // knows its size (the binary deserializer of every remote message), the payload must be there.
  if (const auto* binary = dynamic_cast<const caf::binary_deserializer*>(&f);
      binary && count > binary->remaining() / sizeof(float))
    return caf::make_error(caf::sec::end_of_stream,
                           "tensor shape " + to_string(shape) + " needs " +
                               std::to_string(count * sizeof(float)) + " bytes, only " +
                               std::to_string(binary->remaining()) + " remain: message rejected");
  tensor t = received(shape);
  if (count) {
    if (auto err = f.apply_raw(t.bytes(), t.data())) return err;
  }
  x = std::move(t);
  return {};
}

}  // namespace petra
