// Moving tensors between backends when at least one is a GPU: host ↔ GPU, GPU ↔ GPU (peer
// copies, staged through the host when the two GPUs cannot reach each other), and the ordering
// a tensor needs when one backend hands it to another.
#pragma once

#include "compute/backend.hpp"

namespace petra {

/// A copy of `src`, which `from` made, on `to`'s device. GPU → GPU copies run on `to`'s stream
/// after `from`'s queued work (cudaMemcpyPeerAsync when peer access is possible, otherwise
/// through host memory); `from` then waits for the copy before it can reuse `src`'s memory.
/// Host → GPU is to.from_host, GPU → host is from.to_host, host → host a deep copy.
tensor copy_between(const tensor& src, backend& from, backend& to);

/// Makes `consumer` run its later ops after everything `producer` has queued so far: needed
/// before `consumer` reads a tensor `producer` just made on the same GPU (two backends have
/// two streams). A no-op when either is not a CUDA backend.
void order_after(backend& consumer, backend& producer);

/// The host waits for everything `be` has queued (a no-op on the CPU backend).
void synchronize(backend& be);

}  // namespace petra
