// Backend: the only device-specific surface. Ops come in forward/backward pairs;
// parameter gradients accumulate (+=), activation gradients are fresh tensors. Each public op
// checks its arguments once, here for every backend, and calls the backend's private *_impl.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "compute/precision.hpp"
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

/// What a layer-norm forward keeps for its backward: per token, the mean μ of its C features and
/// 1/sqrt(σ² + eps) (biased variance).
struct layer_norm_saved {
  tensor mean;     // (N, T)
  tensor inv_std;  // (N, T)
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

/// One parameter of sgd_step: its value, its accumulated gradient, its momentum buffer (not read
/// without momentum: may point to an undefined tensor) and its own weight decay.
struct sgd_target {
  tensor* w = nullptr;
  tensor* grad = nullptr;
  tensor* momentum_buffer = nullptr;
  float weight_decay = 0.f;
};

/// AdamW (Loshchilov & Hutter), one step t ≥ 1 of one parameter, as torch.optim.AdamW:
/// w ·= 1 − lr·wd; g = scale·grad; m = β1·m + (1 − β1)·g; v = β2·v + (1 − β2)·g²;
/// w −= (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + eps).
struct adamw_update_params {
  float lr = 0.f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.f;  // decoupled: w ·= 1 − lr·wd before the Adam step
  float grad_scale = 1.f;    // 1/k when k micro-batch gradients were summed
  int64_t step = 1;          // t, 1-based: the bias corrections' exponent
};

/// One parameter of adamw_step: its value, its accumulated gradient, its first and second moments
/// (zero before the first step) and its own weight decay.
struct adamw_target {
  tensor* w = nullptr;
  tensor* grad = nullptr;
  tensor* m = nullptr;
  tensor* v = nullptr;
  float weight_decay = 0.f;
};

/// A loss whose value is read later: softmax_cross_entropy_deferred queues it on the device, and
/// get() waits for it (only for it) and gives what softmax_cross_entropy would have returned.
class deferred_loss {
 public:
  /// What a backend fills in: the loss summed in row order (double) over `rows` rows, the hits.
  struct state {
    virtual ~state() = default;
    /// Waits until the values below hold the device's (a no-op once done).
    virtual void wait() {}
    /// The mean loss as softmax_cross_entropy forms it: the row-order double sum / N, as a float.
    virtual float mean() const { return static_cast<float>(sum / static_cast<double>(rows)); }
    double sum = 0;
    int64_t hits = 0;
    int64_t rows = 1;
  };

  deferred_loss() = default;
  explicit deferred_loss(std::shared_ptr<state> s) : state_(std::move(s)) {}
  bool valid() const { return state_ != nullptr; }
  /// The mean loss, as softmax_cross_entropy returns it (the same bits); *correct = the hits.
  float get(int64_t* correct = nullptr) const;

 private:
  std::shared_ptr<state> state_;
};

class backend {
 public:
  virtual ~backend() = default;
  virtual device where() const = 0;
  virtual std::string name() const = 0;

  // --- memory -------------------------------------------------------------
  tensor empty(const shape_t& shape);
  tensor zeros(const shape_t& shape);
  /// Copy of a host tensor on this device (a deep copy, also on the CPU).
  tensor from_host(const tensor& host);
  /// Copy of one of this device's tensors on the host.
  tensor to_host(const tensor& t);
  /// dst ← src, same shape, same device.
  void copy(const tensor& src, tensor& dst);
  void fill_zero(tensor& t);
  /// A tensor of `shape` holding the first values of the standard normal stream `key`
  /// (compute/gaussian.hpp: counter-based, so every backend draws the same values, a GPU's up to
  /// the last bits of its float log, sin and cos). Forward gradients' random guesses.
  tensor gaussian(const shape_t& shape, uint64_t key);
  /// The host waits for everything this backend has queued (a no-op on the CPU).
  void synchronize();
  /// Bytes held now by the live tensors of this backend's device, every stream of it: a sim
  /// device's tensors, a GPU's memory pool in use; 0 on the CPU (host memory is not counted).
  virtual int64_t device_bytes_in_use() const { return 0; }

  // --- hand-over between backends (docs/design.md §5) ----------------------------
  // A tensor belongs to the backend that made it. Before it goes into a message, that backend
  // calls export_for(t, consumer's device); when the message arrives, the consumer's backend
  // calls import on what it received. Undefined tensors pass through both.
  /// Prepares `t`, made (or imported) by this backend, for a consumer on `consumer` (`cpu` for a
  /// CPU stage, the host or another process). Same device, or another GPU that this one can
  /// reach: records on this backend's stream the point after which `t` is complete and returns
  /// `t` itself. Otherwise: copies it to the host (a GPU through pinned staging memory), waits for
  /// that copy only, and returns the host tensor. On the CPU: `t` itself.
  tensor export_for(const tensor& t, const device& consumer);
  /// Makes `t`, as its producer's export_for returned it, usable by this backend's later ops.
  /// Same device, another stream: this stream waits for the recorded point and `t` itself comes
  /// back (its memory is freed only after this stream's uses). Another device: a copy here after
  /// that point (GPU ↔ GPU peer copy). A host tensor: a copy here (the CPU: `t` itself). A tensor
  /// of another device that was not exported is refused, naming the missing export.
  tensor import(const tensor& t);

  // --- convolution: x (N,C,H,W), w (K,C,R,S), b (K) or undefined -----------
  /// y = x ⋆ w + b → (N,K,P,Q), P = (H + 2p − R)/s + 1.
  tensor conv2d_forward(const tensor& x, const tensor& w, const tensor& b, conv2d_params p);
  /// dx = dy ⋆ᵀ w → x_shape.
  tensor conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape, conv2d_params p);
  /// dw += x ⋆ dy; db += Σ_{n,p,q} dy (db may be undefined).
  void conv2d_backward_filter(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw, tensor& db);

  // --- batch norm over (N,H,W) per channel --------------------------------
  /// y = γ·(x − μ_B)·inv_std + β with batch statistics; fills `saved`.
  tensor batch_norm_forward_train(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                  batch_norm_saved& saved);
  /// running ← (1 − m)·running + m·batch (unbiased variance, as PyTorch).
  void batch_norm_update_running(const batch_norm_saved& saved, int64_t count_per_channel, float eps,
                                 float momentum, tensor& running_mean, tensor& running_var);
  /// y = γ·(x − running_mean)/sqrt(running_var + eps) + β.
  tensor batch_norm_forward_eval(const tensor& x, const tensor& gamma, const tensor& beta,
                                 const tensor& running_mean, const tensor& running_var, float eps);
  /// dx of the training forward; dγ += Σ dy·x̂, dβ += Σ dy.
  tensor batch_norm_backward(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                             const tensor& dy, tensor& dgamma, tensor& dbeta);

  // --- pointwise -----------------------------------------------------------
  tensor relu_forward(const tensor& x);
  /// dx = dy · [y > 0] (y is the ReLU output).
  tensor relu_backward(const tensor& y, const tensor& dy);
  tensor add(const tensor& a, const tensor& b);
  tensor sub(const tensor& a, const tensor& b);
  /// a += b, for a tensor the caller owns and has not shared.
  void add_inplace(tensor& a, const tensor& b);

  // --- pooling -------------------------------------------------------------
  /// 2×2 window, stride 2: (N,C,H,W) → (N,C,H/2,W/2) (H, W even).
  tensor max_pool2x2_forward(const tensor& x);
  tensor max_pool2x2_backward(const tensor& x, const tensor& dy);
  /// Forward mode: ẏ = ẋ at each window's first maximum of x → (N,C,H/2,W/2), the transpose of
  /// max_pool2x2_backward (it picks the same maximum).
  tensor max_pool2x2_jvp(const tensor& x, const tensor& x_dot);
  /// (N,C,H,W) → (N,C), the mean over H·W.
  tensor global_avg_pool_forward(const tensor& x);
  tensor global_avg_pool_backward(const tensor& dy, const shape_t& x_shape);

  // --- linear: x (N,I), w (O,I), b (O) -------------------------------------
  /// y = x·wᵀ + b → (N,O).
  tensor linear_forward(const tensor& x, const tensor& w, const tensor& b);
  /// dx = dy·w → (N,I).
  tensor linear_backward_data(const tensor& dy, const tensor& w);
  /// dw += dyᵀ·x; db += Σ_n dy.
  void linear_backward_weight(const tensor& x, const tensor& dy, tensor& dw, tensor& db);

  // --- token ops (transformers): x (N, T, C), N samples of T tokens of C features, row-major ---
  /// y = γ·(x − μ)·inv_std + β, μ and the biased σ² over each token's C features; fills `saved`.
  tensor layer_norm_forward(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                            layer_norm_saved& saved);
  /// dx of layer_norm_forward; dγ += Σ_tokens dy·x̂, dβ += Σ_tokens dy.
  tensor layer_norm_backward(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                             const tensor& dy, tensor& dgamma, tensor& dbeta);
  /// Forward mode, x's part: ẏ = γ·inv_std·(ẋ − mean(ẋ) − x̂·mean(ẋ·x̂)) per token (not symmetric
  /// in the features, unlike batch norm's, so not the backward applied to ẋ).
  tensor layer_norm_jvp(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                        const tensor& x_dot);
  /// y = x·Φ(x) = x/2·(1 + erf(x/√2)), the exact (erf) GELU, elementwise on any shape.
  tensor gelu_forward(const tensor& x);
  /// dx = dy·(Φ(x) + x·φ(x)), φ the standard normal density.
  tensor gelu_backward(const tensor& x, const tensor& dy);
  /// y = softmax over the last axis (any rank ≥ 1): exp(x − max)/Σ exp(x − max).
  tensor softmax_forward(const tensor& x);
  /// dx = y·(dy − Σ_last dy·y), from the output y.
  tensor softmax_backward(const tensor& y, const tensor& dy);
  /// c[i] = op(a[i])·op(b[i]) for each i of the batch → (B, M, N); op(a) = a (B, M, K) or, with
  /// transpose_a, aᵀ of a (B, K, M); op(b) = b (B, K, N) or, with transpose_b, bᵀ of b (B, N, K).
  tensor batched_matmul(const tensor& a, const tensor& b, bool transpose_a, bool transpose_b);
  /// {da, db}, fresh and shaped as a and b: d op(a) = dc·op(b)ᵀ, d op(b) = op(a)ᵀ·dc per item.
  std::pair<tensor, tensor> batched_matmul_backward(const tensor& a, const tensor& b, const tensor& dc,
                                                    bool transpose_a, bool transpose_b);
  /// (N, T, C) → (N, C), the mean over the T tokens.
  tensor token_mean_forward(const tensor& x);
  /// dx[n, t, c] = dy[n, c]/T → x_shape (N, T, C).
  tensor token_mean_backward(const tensor& dy, const shape_t& x_shape);
  /// y = α·x elementwise, any shape (attention's 1/√d_head on its scores). Linear: its backward and
  /// its tangent are the op itself with the same α.
  tensor scale(const tensor& x, float alpha);
  /// (N, A, B, C) → (N, B, A, C), axes 1 and 2 swapped (PyTorch's x.transpose(1, 2).contiguous()):
  /// attention's heads (N, T, h, d) ↔ (N, h, T, d), a feature map (N, C, H·W, 1) → tokens
  /// (N, H·W, C, 1). A permutation: its backward and tangent are the op on dy and on ẋ.
  tensor transpose12(const tensor& x);

  // --- channels ------------------------------------------------------------
  /// (N,2C,H,W) → two (N,C,H,W) halves.
  std::pair<tensor, tensor> split_channels(const tensor& x);
  /// Two (N,C,H,W) → (N,2C,H,W).
  tensor concat_channels(const tensor& a, const tensor& b);

  // --- loss ----------------------------------------------------------------
  /// Mean softmax cross-entropy of logits (N,K) against labels in [0,K);
  /// dlogits (if asked) = (softmax − onehot)/N; *correct = #argmax hits.
  float softmax_cross_entropy(const tensor& logits, const std::vector<int32_t>& labels, tensor* dlogits,
                              int64_t* correct);
  /// The same, with the loss and the hits read later: a GPU sums them on the device and copies them
  /// to pinned memory without the host waiting (dlogits, if asked, is queued as usual).
  deferred_loss softmax_cross_entropy_deferred(const tensor& logits, const std::vector<int32_t>& labels,
                                               tensor* dlogits);

  // --- optimizer -----------------------------------------------------------
  void sgd_update(tensor& w, const tensor& grad, tensor& momentum_buffer, const sgd_update_params& p);
  /// sgd_update of every target with `p` and the target's own weight decay, then its gradient
  /// zeroed (as fill_zero): the same bits as those calls one by one (a GPU: one launch for all).
  /// The targets' tensors are distinct.
  void sgd_step(const std::vector<sgd_target>& targets, const sgd_update_params& p);
  void adamw_update(tensor& w, const tensor& grad, tensor& m, tensor& v, const adamw_update_params& p);
  /// adamw_update of every target with `p` and the target's own weight decay, then its gradient
  /// zeroed: the same bits as those calls one by one. The targets' tensors are distinct.
  void adamw_step(const std::vector<adamw_target>& targets, const adamw_update_params& p);

 private:
  // The checks every op shares (op_checks.cpp): `t` is defined, of this backend's device, usable
  // by it (check_usable) and, where a layout such as "(N, C, H, W)" is given, of its rank.
  void require(const char* op, const char* name, const tensor& t) const;
  void require(const char* op, const char* name, const tensor& t, std::size_t rank, const char* layout) const;
  /// A per-channel vector of `channels` entries (γ, β, a bias, running statistics); `of` names
  /// what has that many channels.
  void require_vector(const char* op, const char* name, const tensor& t, int64_t channels,
                      const char* of) const;

  /// sgd_update's arguments (w, grad and, with momentum, the buffer: of this backend, shaped alike),
  /// named for `op`.
  void require_sgd(const char* op, const tensor& w, const tensor& grad, const tensor& momentum_buffer,
                   const sgd_update_params& p) const;
  /// adamw_update's arguments (w, grad, m and v of this backend, shaped alike; β in [0, 1), eps > 0,
  /// t ≥ 1), named for `op`.
  void require_adamw(const char* op, const tensor& w, const tensor& grad, const tensor& m, const tensor& v,
                     const adamw_update_params& p) const;

  /// Beyond its device, may this backend use `t` now? Throws std::invalid_argument naming `op`,
  /// `name` and the missing step when not (sim: a tensor another stream made and did not hand
  /// over). By default every tensor of the device may be used.
  virtual void check_usable(const char* op, const char* name, const tensor& t) const;

  // Each op of a backend, called by the public op of the same name once its arguments are checked:
  // tensors defined and of this device, ranks, shapes and parameters as documented above. What
  // only a device can check (a value, a limit of a library) is checked here.
  virtual tensor empty_impl(const shape_t& shape) = 0;
  virtual tensor zeros_impl(const shape_t& shape) = 0;
  virtual tensor from_host_impl(const tensor& host) = 0;
  virtual tensor to_host_impl(const tensor& t) = 0;
  virtual void copy_impl(const tensor& src, tensor& dst) = 0;
  virtual void fill_zero_impl(tensor& t) = 0;
  /// By default drawn on the host and copied here (from_host).
  virtual tensor gaussian_impl(const shape_t& shape, uint64_t key);
  virtual void synchronize_impl() = 0;
  virtual tensor export_for_impl(const tensor& t, const device& consumer) = 0;
  virtual tensor import_impl(const tensor& t) = 0;
  virtual tensor conv2d_forward_impl(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) = 0;
  virtual tensor conv2d_backward_data_impl(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                           conv2d_params p) = 0;
  virtual void conv2d_backward_filter_impl(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                           tensor& db) = 0;
  virtual tensor batch_norm_forward_train_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                               float eps, batch_norm_saved& saved) = 0;
  virtual void batch_norm_update_running_impl(const batch_norm_saved& saved, int64_t count_per_channel,
                                              float eps, float momentum, tensor& running_mean,
                                              tensor& running_var) = 0;
  virtual tensor batch_norm_forward_eval_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                              const tensor& running_mean, const tensor& running_var,
                                              float eps) = 0;
  virtual tensor batch_norm_backward_impl(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                                          const tensor& dy, tensor& dgamma, tensor& dbeta) = 0;
  virtual tensor relu_forward_impl(const tensor& x) = 0;
  virtual tensor relu_backward_impl(const tensor& y, const tensor& dy) = 0;
  virtual tensor add_impl(const tensor& a, const tensor& b) = 0;
  virtual tensor sub_impl(const tensor& a, const tensor& b) = 0;
  virtual void add_inplace_impl(tensor& a, const tensor& b) = 0;
  virtual tensor max_pool2x2_forward_impl(const tensor& x) = 0;
  virtual tensor max_pool2x2_backward_impl(const tensor& x, const tensor& dy) = 0;
  virtual tensor max_pool2x2_jvp_impl(const tensor& x, const tensor& x_dot) = 0;
  virtual tensor global_avg_pool_forward_impl(const tensor& x) = 0;
  virtual tensor global_avg_pool_backward_impl(const tensor& dy, const shape_t& x_shape) = 0;
  virtual tensor linear_forward_impl(const tensor& x, const tensor& w, const tensor& b) = 0;
  virtual tensor linear_backward_data_impl(const tensor& dy, const tensor& w) = 0;
  virtual void linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) = 0;
  virtual tensor layer_norm_forward_impl(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                         layer_norm_saved& saved) = 0;
  virtual tensor layer_norm_backward_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                                          const tensor& dy, tensor& dgamma, tensor& dbeta) = 0;
  virtual tensor layer_norm_jvp_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                                     const tensor& x_dot) = 0;
  virtual tensor gelu_forward_impl(const tensor& x) = 0;
  virtual tensor gelu_backward_impl(const tensor& x, const tensor& dy) = 0;
  virtual tensor softmax_forward_impl(const tensor& x) = 0;
  virtual tensor softmax_backward_impl(const tensor& y, const tensor& dy) = 0;
  virtual tensor batched_matmul_impl(const tensor& a, const tensor& b, bool transpose_a,
                                     bool transpose_b) = 0;
  virtual std::pair<tensor, tensor> batched_matmul_backward_impl(const tensor& a, const tensor& b,
                                                                 const tensor& dc, bool transpose_a,
                                                                 bool transpose_b) = 0;
  virtual tensor token_mean_forward_impl(const tensor& x) = 0;
  virtual tensor token_mean_backward_impl(const tensor& dy, const shape_t& x_shape) = 0;
  virtual tensor scale_impl(const tensor& x, float alpha) = 0;
  virtual tensor transpose12_impl(const tensor& x) = 0;
  virtual std::pair<tensor, tensor> split_channels_impl(const tensor& x) = 0;
  virtual tensor concat_channels_impl(const tensor& a, const tensor& b) = 0;
  virtual float softmax_cross_entropy_impl(const tensor& logits, const std::vector<int32_t>& labels,
                                           tensor* dlogits, int64_t* correct) = 0;
  virtual void sgd_update_impl(tensor& w, const tensor& grad, tensor& momentum_buffer,
                               const sgd_update_params& p) = 0;
  /// By default the loss now (softmax_cross_entropy_impl), already read.
  virtual deferred_loss softmax_cross_entropy_deferred_impl(const tensor& logits,
                                                            const std::vector<int32_t>& labels,
                                                            tensor* dlogits);
  /// By default sgd_update_impl and fill_zero_impl per target, in order.
  virtual void sgd_step_impl(const std::vector<sgd_target>& targets, const sgd_update_params& p);
  virtual void adamw_update_impl(tensor& w, const tensor& grad, tensor& m, tensor& v,
                                 const adamw_update_params& p) = 0;
  /// By default adamw_update_impl and fill_zero_impl per target, in order.
  virtual void adamw_step_impl(const std::vector<adamw_target>& targets, const adamw_update_params& p);
};

/// The CPU backend (Eigen, OpenBLAS, oneDNN), using `threads` threads. It does not check that
/// the CPU has bf16 instructions (make_backend does).
std::unique_ptr<backend> make_cpu_backend(int threads, math_precision precision = math_precision::fp32);

}  // namespace petra
