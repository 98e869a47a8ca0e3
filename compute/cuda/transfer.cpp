// Copies between devices and cross-stream ordering for the CUDA backend.
#include "compute/cuda/transfer.hpp"

#include <memory>

#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"

namespace petra {

namespace {

using cuda::fail;

cuda_backend* as_cuda(backend& be) { return dynamic_cast<cuda_backend*>(&be); }

/// A CUDA event for one ordering point, made on the GPU of the stream that records it.
class event {
 public:
  explicit event(int recorder_device) {
    cuda::use_device(recorder_device);
    PETRA_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  }
  ~event() { cudaEventDestroy(event_); }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  /// `waiter` runs its later work after what `recorder` has queued so far.
  void order(cudaStream_t waiter, cudaStream_t recorder) {
    PETRA_CUDA_CHECK(cudaEventRecord(event_, recorder));
    PETRA_CUDA_CHECK(cudaStreamWaitEvent(waiter, event_, 0));
  }

 private:
  cudaEvent_t event_ = nullptr;
};

/// True when GPU `to` can read GPU `from`'s memory directly; enables it once per pair.
bool peer_access(int to, int from) {
  int possible = 0;
  PETRA_CUDA_CHECK(cudaDeviceCanAccessPeer(&possible, to, from));
  if (!possible) return false;
  cuda::use_device(to);
  const cudaError_t status = cudaDeviceEnablePeerAccess(from, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // not an error for us: an earlier copy enabled it
    return true;
  }
  PETRA_CUDA_CHECK(status);
  return true;
}

}  // namespace

tensor copy_between(const tensor& src, backend& from, backend& to) {
  const char* op = "copy_between";
  if (!src.defined()) fail(op, "the tensor is undefined: nothing to copy");
  if (src.where() != from.where())
    fail(op, "the tensor " + src.shape_str() + " lives on " + src.where().str() + ", not on " +
                 from.where().str() + " (the backend named as its maker)");
  if (from.where().type == device_type::cpu) return to.from_host(src);
  if (to.where().type == device_type::cpu) return from.to_host(src);
  cuda_backend* source = as_cuda(from);
  cuda_backend* target = as_cuda(to);
  if (!source || !target) fail(op, "a backend on a CUDA device is not the CUDA backend");
  if (from.where() == to.where()) {  // same GPU, two streams; frees wait for both (device_context.hpp)
    order_after(to, from);
    tensor copy = to.empty(src.shape());
    to.copy(src, copy);
    return copy;
  }
  const int from_index = from.where().index, to_index = to.where().index;
  if (peer_access(to_index, from_index)) {
    tensor copy = to.empty(src.shape());
    event ready(from_index);
    ready.order(target->stream(), source->stream());
    cuda::use_device(to_index);
    if (src.numel())
      PETRA_CUDA_CHECK(
          cudaMemcpyPeerAsync(copy.data(), to_index, src.data(), from_index, src.bytes(), target->stream()));
    event done(to_index);
    done.order(source->stream(), target->stream());  // src's memory stays until the copy has read it
    return copy;
  }
  // No peer access: through the host. to_host waits for `from`; from_host stages the buffer.
  return to.from_host(from.to_host(src));
}

void order_after(backend& consumer, backend& producer) {
  cuda_backend* c = as_cuda(consumer);
  cuda_backend* p = as_cuda(producer);
  if (!c || !p || c == p) return;
  event e(p->where().index);
  e.order(c->stream(), p->stream());
}

void synchronize(backend& be) {
  if (cuda_backend* c = as_cuda(be)) c->synchronize();
}

}  // namespace petra
