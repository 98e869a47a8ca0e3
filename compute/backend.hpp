// Backend: the only device-specific surface. Ops come in forward/backward pairs;
// parameter gradients accumulate (+=), activation gradients are fresh tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compute/tensor.hpp"

namespace petra {

struct conv2d_params {
  int stride = 1;
  int padding = 0;
};

/// What a training batch-norm forward keeps for its backward: per-channel batch
/// mean μ_B and 1/sqrt(σ²_B + eps) (biased variance).
struct batch_norm_saved {
  tensor mean;     // (C)
  tensor inv_std;  // (C)
};

/// SGD with momentum, one parameter: g = scale·grad (+ wd·w); buf = μ·buf + g;
/// step = nesterov ? g + μ·buf : buf; w −= lr·step.
struct sgd_update_params {
  float lr = 0.f;
  float momentum = 0.f;
  float weight_decay = 0.f;
  bool nesterov = false;
  float grad_scale = 1.f;  // 1/k when k micro-batch gradients were summed
};

class backend {
 public:
  virtual ~backend() = default;
  virtual device where() const = 0;
  virtual std::string name() const = 0;

  // --- memory -------------------------------------------------------------
  virtual tensor empty(const shape_t& shape) = 0;
  virtual tensor zeros(const shape_t& shape) = 0;
  /// Copy of a host tensor on this device (a deep copy, also on the CPU).
  virtual tensor from_host(const tensor& host) = 0;
  /// Copy of one of this device's tensors on the host.
  virtual tensor to_host(const tensor& t) = 0;
  /// dst ← src, same shape, same device.
  virtual void copy(const tensor& src, tensor& dst) = 0;
  virtual void fill_zero(tensor& t) = 0;
  /// The host waits for everything this backend has queued (a no-op on the CPU).
  virtual void synchronize() = 0;
  /// Bytes held now by the live tensors of this backend's device, every stream of it: a sim
  /// device's tensors, a GPU's memory pool in use; 0 on the CPU (host memory is not counted).
  virtual int64_t device_bytes_in_use() const { return 0; }

  // --- hand-over between backends (DESIGN.md §5) ----------------------------
  // A tensor belongs to the backend that made it. Before it goes into a message, that backend
  // calls export_for(t, consumer's device); when the message arrives, the consumer's backend
  // calls import on what it received. Undefined tensors pass through both.
  /// Prepares `t`, made (or imported) by this backend, for a consumer on `consumer` (`cpu` for a
  /// CPU stage, the host or another process). Same device, or another GPU that this one can
  /// reach: records on this backend's stream the point after which `t` is complete and returns
  /// `t` itself. Otherwise: copies it to the host (a GPU through pinned staging memory), waits for
  /// that copy only, and returns the host tensor. On the CPU: `t` itself.
  virtual tensor export_for(const tensor& t, const device& consumer) = 0;
  /// Makes `t`, as its producer's export_for returned it, usable by this backend's later ops.
  /// Same device, another stream: this stream waits for the recorded point and `t` itself comes
  /// back (its memory is freed only after this stream's uses). Another device: a copy here after
  /// that point (GPU ↔ GPU peer copy). A host tensor: a copy here (the CPU: `t` itself). A tensor
  /// of another device that was not exported is refused, naming the missing export.
  virtual tensor import(const tensor& t) = 0;

  // --- convolution: x (N,C,H,W), w (K,C,R,S), b (K) or undefined -----------
  /// y = x ⋆ w + b → (N,K,P,Q), P = (H + 2p − R)/s + 1.
  virtual tensor conv2d_forward(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) = 0;
  /// dx = dy ⋆ᵀ w → x_shape.
  virtual tensor conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                      conv2d_params p) = 0;
  /// dw += x ⋆ dy; db += Σ_{n,p,q} dy (db may be undefined).
  virtual void conv2d_backward_filter(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                      tensor& db) = 0;

  // --- batch norm over (N,H,W) per channel --------------------------------
  /// y = γ·(x − μ_B)·inv_std + β with batch statistics; fills `saved`.
  virtual tensor batch_norm_forward_train(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                          batch_norm_saved& saved) = 0;
  /// running ← (1 − m)·running + m·batch (unbiased variance, as PyTorch).
  virtual void batch_norm_update_running(const batch_norm_saved& saved, int64_t count_per_channel, float eps,
                                         float momentum, tensor& running_mean, tensor& running_var) = 0;
  /// y = γ·(x − running_mean)/sqrt(running_var + eps) + β.
  virtual tensor batch_norm_forward_eval(const tensor& x, const tensor& gamma, const tensor& beta,
                                         const tensor& running_mean, const tensor& running_var,
                                         float eps) = 0;
  /// dx of the training forward; dγ += Σ dy·x̂, dβ += Σ dy.
  virtual tensor batch_norm_backward(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                                     const tensor& dy, tensor& dgamma, tensor& dbeta) = 0;

  // --- pointwise -----------------------------------------------------------
  virtual tensor relu_forward(const tensor& x) = 0;
  /// dx = dy · [y > 0] (y is the ReLU output).
  virtual tensor relu_backward(const tensor& y, const tensor& dy) = 0;
  virtual tensor add(const tensor& a, const tensor& b) = 0;
  virtual tensor sub(const tensor& a, const tensor& b) = 0;
  /// a += b, for a tensor the caller owns and has not shared.
  virtual void add_inplace(tensor& a, const tensor& b) = 0;

  // --- pooling -------------------------------------------------------------
  /// 2×2 window, stride 2: (N,C,H,W) → (N,C,H/2,W/2) (H, W even).
  virtual tensor max_pool2x2_forward(const tensor& x) = 0;
  virtual tensor max_pool2x2_backward(const tensor& x, const tensor& dy) = 0;
  /// (N,C,H,W) → (N,C), the mean over H·W.
  virtual tensor global_avg_pool_forward(const tensor& x) = 0;
  virtual tensor global_avg_pool_backward(const tensor& dy, const shape_t& x_shape) = 0;

  // --- linear: x (N,I), w (O,I), b (O) -------------------------------------
  /// y = x·wᵀ + b → (N,O).
  virtual tensor linear_forward(const tensor& x, const tensor& w, const tensor& b) = 0;
  /// dx = dy·w → (N,I).
  virtual tensor linear_backward_data(const tensor& dy, const tensor& w) = 0;
  /// dw += dyᵀ·x; db += Σ_n dy.
  virtual void linear_backward_weight(const tensor& x, const tensor& dy, tensor& dw, tensor& db) = 0;

  // --- channels ------------------------------------------------------------
  /// (N,2C,H,W) → two (N,C,H,W) halves.
  virtual std::pair<tensor, tensor> split_channels(const tensor& x) = 0;
  /// Two (N,C,H,W) → (N,2C,H,W).
  virtual tensor concat_channels(const tensor& a, const tensor& b) = 0;

  // --- loss ----------------------------------------------------------------
  /// Mean softmax cross-entropy of logits (N,K) against labels in [0,K);
  /// dlogits (if asked) = (softmax − onehot)/N; *correct = #argmax hits.
  virtual float softmax_cross_entropy(const tensor& logits, const std::vector<int32_t>& labels,
                                      tensor* dlogits, int64_t* correct) = 0;

  // --- optimizer -----------------------------------------------------------
  virtual void sgd_update(tensor& w, const tensor& grad, tensor& momentum_buffer,
                          const sgd_update_params& p) = 0;
};

/// The CPU backend (Eigen, OpenBLAS, oneDNN), using `threads` threads.
std::unique_ptr<backend> make_cpu_backend(int threads);

}  // namespace petra
