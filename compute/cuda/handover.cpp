// Every copy between this GPU and anything else, and the hand-over of docs/design.md §5: the same GPU
// shares memory after an event, another GPU copies peer to peer (or the producer goes through the
// host when the two cannot reach each other), the host goes through pinned memory both ways.
#include <cstring>

#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/op_checks.hpp"

namespace petra {

namespace {

/// The stream-ordered memory behind a tensor of a GPU (our allocator made every such tensor).
cuda::device_storage& memory_of(const char* op, const tensor& t) {
  auto* memory = dynamic_cast<cuda::device_storage*>(t.buffer().get());
  if (!memory)
    fail_op(op, "the tensor " + t.shape_str() + " on " + t.where().str() +
                    " was not made by a CUDA backend of this process: it has no stream to order it by");
  return *memory;
}

}  // namespace

tensor cuda_backend::upload(const tensor& host, bool staged) {
  enter();
  tensor mine = output(host.shape());
  if (!host.numel()) return mine;
  tensor source = host;
  if (staged || !cuda::is_pinned(host)) {
    // A copy from pageable memory would make the driver stage it synchronously: stage it here.
    source = context_->pinned(host.shape());
    std::memcpy(source.data(), host.data(), host.bytes());
  }
  PETRA_CUDA_CHECK(
      cudaMemcpyAsync(mine.data(), source.data(), host.bytes(), cudaMemcpyHostToDevice, stream()));
  context_->track_upload(std::move(source));
  return mine;
}

tensor cuda_backend::download(const tensor& t) {
  enter();
  tensor host = context_->pinned(t.shape());
  if (!t.numel()) return host;
  PETRA_CUDA_CHECK(cudaMemcpyAsync(host.data(), t.data(), t.bytes(), cudaMemcpyDeviceToHost, stream()));
  cuda::event_handle copied(index_);
  copied.record(stream());
  copied.wait();  // this copy (and what came before it on the stream), not the whole device
  return host;
}

tensor cuda_backend::from_host_impl(const tensor& host) {
  return upload(host, /*staged=*/true);  // the caller may change `host` as soon as this returns
}

tensor cuda_backend::to_host_impl(const tensor& t) { return download(t); }

bool cuda_backend::reachable_from(int peer) {
  const auto known = reachable_.find(peer);
  if (known != reachable_.end()) return known->second;
  int possible = 0;
  PETRA_CUDA_CHECK(cudaDeviceCanAccessPeer(&possible, peer, index_));
  if (possible) {
    // Memory from cudaMallocAsync ignores cudaDeviceEnablePeerAccess: its pool grants access.
    if (cudaMemPool_t pool = cuda::memory_pool(index_)) {
      cudaMemAccessDesc access{};
      access.location.type = cudaMemLocationTypeDevice;
      access.location.id = peer;
      access.flags = cudaMemAccessFlagsProtReadWrite;
      PETRA_CUDA_CHECK(cudaMemPoolSetAccess(pool, &access, 1));
    }
    // Memory from cudaMalloc (no pools) follows peer access, enabled on the reading GPU.
    cuda::use_device(peer);
    const cudaError_t status = cudaDeviceEnablePeerAccess(index_, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled)
      cudaGetLastError();  // another backend enabled it already
    else
      PETRA_CUDA_CHECK(status);
    enter();
  }
  reachable_[peer] = possible != 0;
  return possible != 0;
}

tensor cuda_backend::export_for_impl(const tensor& t, const device& consumer) {
  const char* op = "export_for";
  cuda::device_storage& memory = memory_of(op, t);
  if (!memory.usable_by(*context_->shared_stream()))
    fail_op(op, "the tensor " + t.shape_str() + " was made on another stream of " + where().str() +
                    " and not imported by this backend: only its maker (or an importer) can export it");
  enter();
  if (consumer.type == device_type::cuda && (consumer.index == index_ || reachable_from(consumer.index))) {
    memory.record_ready(*context_->shared_stream());
    return t;  // the consumer waits for this point on its own stream (and copies if on another GPU)
  }
  // The host, a CPU or sim stage, another process, or a GPU that cannot reach this one.
  return download(t);
}

tensor cuda_backend::import_impl(const tensor& t) {
  const char* op = "import";
  const device from = t.where();
  if (from.type == device_type::cpu)
    return upload(t, /*staged=*/false);  // a message's tensor stays unchanged
  if (from.type != device_type::cuda)
    fail_op(op, "the tensor " + t.shape_str() + " lives on " + from.str() + ": it reaches " + where().str() +
                    " through the host (export_for cpu on its maker)");
  cuda::device_storage& theirs = memory_of(op, t);
  const std::shared_ptr<cuda::stream_handle>& mine = context_->shared_stream();
  if (from == where() && theirs.usable_by(*mine)) return t;  // made or imported here already
  enter();
  if (!theirs.wait_ready(stream()))
    fail_op(op, "the tensor " + t.shape_str() + " of " + from.str() +
                    " was not exported: its maker must call export_for before it is sent");
  // From here this stream uses the memory: its free waits for the work queued here by then.
  theirs.add_user(mine);
  if (from == where()) return t;
  tensor copy = output(t.shape());
  if (t.numel())
    PETRA_CUDA_CHECK(cudaMemcpyPeerAsync(copy.data(), index_, t.data(), from.index, t.bytes(), stream()));
  return copy;
}

}  // namespace petra
