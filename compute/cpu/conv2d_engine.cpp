// oneDNN convolution primitives, cached per shape, with reorders between the
// callers' plain layouts and the layouts oneDNN picks (format_tag::any). Each primitive gets its
// scratchpad from the engine (scratchpad_mode::user): oneDNN's own is tied to the thread that built
// the primitive, and a stage's actor runs on whichever thread the scheduler gives it.
#include "compute/cpu/conv2d_engine.hpp"

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "compute/cpu/parallel.hpp"
#include "compute/cpu/weight_cache.hpp"
#include "compute/cpu/winograd.hpp"

namespace petra {

namespace {

using dnnl::memory;
using dims = memory::dims;

constexpr int slot_src = 0;      // x, dx
constexpr int slot_weights = 1;  // w, dw
constexpr int slot_dst = 2;      // y, dy

memory::desc plain(const dims& d, memory::format_tag tag) {
  return memory::desc(d, memory::data_type::f32, tag);
}
memory::desc any(const dims& d, memory::data_type type = memory::data_type::f32) {
  return memory::desc(d, type, memory::format_tag::any);
}

/// Points `scratch` (a primitive's scratchpad desc, of size 0 when it needs none) at the engine's
/// scratchpad and adds it to the primitive's arguments.
void with_scratchpad(memory& scratch, tensor& scratchpad, std::unordered_map<int, memory>& args) {
  if (scratch.get_desc().get_size() == 0) return;
  scratch.set_data_handle(scratchpad.data());
  args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
}

/// The primitive descriptor `make` builds with `preferred`, or with the direct algorithm where
/// oneDNN has no `preferred` kernel for the geometry (Winograd: 3×3 stride 1 only).
template <class Make>
auto preferred_or_direct(dnnl::algorithm preferred, Make make) {
  if (preferred != dnnl::algorithm::convolution_direct) {
    try {
      return make(preferred);
    } catch (const dnnl::error&) {
      // no such kernel for this geometry
    }
  }
  return make(dnnl::algorithm::convolution_direct);
}

}  // namespace

std::string conv2d_geometry::str() const {
  return "x (" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(h) + ", " +
         std::to_string(w) + "), w (" + std::to_string(k) + ", " + std::to_string(c) + ", " +
         std::to_string(r) + ", " + std::to_string(s) + "), stride " + std::to_string(stride) + ", padding " +
         std::to_string(padding) + (bias ? ", with bias" : ", no bias");
}

bool winograd_pays(const conv2d_geometry& g) {
  return g.r == 3 && g.s == 3 && g.stride == 1 && g.c % 16 == 0 && g.k % 16 == 0 && g.c >= 32 && g.k >= 32;
}

bool conv2d_geometry::operator<(const conv2d_geometry& o) const {
  return std::tie(n, c, h, w, k, r, s, stride, padding, bias) <
         std::tie(o.n, o.c, o.h, o.w, o.k, o.r, o.s, o.stride, o.padding, o.bias);
}

struct conv2d_engine::dnnl_state {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  weight_cache weights;
};

/// A caller's buffer in its plain layout and, when the primitive wants another
/// layout, its copy in a workspace slot with the reorder between them.
struct conv2d_engine::operand {
  memory user;
  memory internal;        // == user when no reorder is needed
  dnnl::reorder convert;  // user → internal (inputs) or internal → user (outputs)
  memory scratch;         // the reorder's scratchpad (in the engine's), when it needs one
  int slot = -1;          // workspace slot of `internal`; -1 when internal is user
};

struct conv2d_engine::primitives {
  dnnl::convolution_forward forward;
  std::string forward_kernel;  // oneDNN's implementation name
  operand fwd_x, fwd_w, fwd_y;
  memory fwd_b, fwd_scratch;

  dnnl::convolution_backward_data backward_data;
  operand bwd_dy, bwd_w, bwd_dx;
  memory bwd_scratch;

  dnnl::convolution_backward_weights backward_weights;
  operand bww_x, bww_dy, bww_dw;  // bww_dw's reorder adds into the caller's dw
  memory bww_db;                  // into db_scratch, then added to the caller's db
  memory bww_scratch;
  tensor db_scratch;

  bool own_winograd = false;  // petra's Winograd runs all three passes; only `forward` is built (unused)

  std::size_t slot_bytes[3] = {0, 0, 0};
  std::size_t scratchpad_bytes = 0;  // the largest scratchpad of these primitives and reorders
};

conv2d_engine::conv2d_engine(int threads, bool bf16_operands, bool winograd, bool keep_converted_weights)
    : threads_(threads),
      bf16_operands_(bf16_operands),
      winograd_(winograd && !bf16_operands),
      keep_converted_weights_(keep_converted_weights),
      dnnl_(std::make_unique<dnnl_state>()) {
  if (winograd_) own_winograd_ = std::make_unique<cpu::winograd_conv>();
}

conv2d_engine::~conv2d_engine() = default;

int64_t conv2d_engine::weight_conversions() const { return dnnl_->weights.conversions(); }
int64_t conv2d_engine::weight_reuses() const { return dnnl_->weights.reuses(); }

/// Builds one geometry's primitives: the forward, backward-data and backward-weights convolutions and
/// the reorders between their operands' plain layouts and the layouts oneDNN picks, recording the
/// workspace slots and the scratchpad they need.
struct conv2d_engine::primitives_builder {
  primitives_builder(const dnnl::engine& engine, const conv2d_geometry& geometry, bool bf16_operands,
                     bool winograd)
      : eng(engine),
        g(geometry),
        in(bf16_operands ? memory::data_type::bf16 : memory::data_type::f32),
        x_dims{g.n, g.c, g.h, g.w},
        w_dims{g.k, g.c, g.r, g.s},
        y_dims{g.n, g.k, g.p(), g.q()},
        strides{g.stride, g.stride},
        pads{g.padding, g.padding},
        x_plain(plain(x_dims, memory::format_tag::nchw)),
        w_plain(plain(w_dims, memory::format_tag::oihw)),
        y_plain(plain(y_dims, memory::format_tag::nchw)),
        b_plain(plain({g.k}, memory::format_tag::x)),
        // Winograd F(4×4, 3×3) where oneDNN has it (3×3, stride 1): about 4× fewer multiplications
        // than the direct kernels, the same results to fp32 round-off (a few times the direct
        // kernels' round-off). Only for widths in whole blocks of 16 channels, the kernel's unit: a
        // narrower layer (a stem's 1 or 3 input channels, the tests' small blocks) would be padded to
        // 16 and is direct, as is everything else, and bf16 operands, whose error bound counts exact
        // products. And only from 32 channels in and out (winograd_pays): at 16 its transforms of
        // every tile cost more than the multiplications they save (bench_conv_kernels).
        preferred(winograd && winograd_pays(g) ? dnnl::algorithm::convolution_winograd
                                               : dnnl::algorithm::convolution_direct) {
    user_scratchpad.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  }

  /// The forward convolution (training: the backward passes are hinted by it) and its operands.
  dnnl::convolution_forward::primitive_desc forward() {
    const auto pd = preferred_or_direct(preferred, [&](dnnl::algorithm a) {
      return dnnl::convolution_forward::primitive_desc(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, a, any(x_dims, in),
                                          any(w_dims, in), g.bias ? b_plain : no_bias, any(y_dims), strides,
                                          pads, pads),
          user_scratchpad, eng);
    });
    p->forward = dnnl::convolution_forward(pd);
    p->forward_kernel = pd.impl_info_str();
    p->fwd_scratch = scratchpad_of(pd.scratchpad_desc());
    p->fwd_x = make_operand(x_plain, pd.src_desc(), false, slot_src, false);
    p->fwd_w = make_operand(w_plain, pd.weights_desc(), false, slot_weights, false);
    p->fwd_y = make_operand(y_plain, pd.dst_desc(), true, slot_dst, false);
    p->fwd_b = memory(b_plain, eng, DNNL_MEMORY_NONE);
    return pd;
  }

  /// dx from dy and w.
  void backward_data(const dnnl::convolution_forward::primitive_desc& fwd) {
    const auto pd = preferred_or_direct(preferred, [&](dnnl::algorithm a) {
      return dnnl::convolution_backward_data::primitive_desc(
          dnnl::convolution_backward_data::desc(a, any(x_dims), any(w_dims, in), any(y_dims, in), strides,
                                                pads, pads),
          user_scratchpad, eng, fwd);
    });
    p->backward_data = dnnl::convolution_backward_data(pd);
    p->bwd_scratch = scratchpad_of(pd.scratchpad_desc());
    p->bwd_dy = make_operand(y_plain, pd.diff_dst_desc(), false, slot_dst, false);
    p->bwd_w = make_operand(w_plain, pd.weights_desc(), false, slot_weights, false);
    p->bwd_dx = make_operand(x_plain, pd.diff_src_desc(), true, slot_src, false);
  }

  /// dw (added into the caller's) and db from x and dy.
  void backward_weights(const dnnl::convolution_forward::primitive_desc& fwd) {
    const auto pd = preferred_or_direct(preferred, [&](dnnl::algorithm a) {
      return dnnl::convolution_backward_weights::primitive_desc(
          dnnl::convolution_backward_weights::desc(a, any(x_dims, in), any(w_dims),
                                                   g.bias ? b_plain : no_bias, any(y_dims, in), strides, pads,
                                                   pads),
          user_scratchpad, eng, fwd);
    });
    p->backward_weights = dnnl::convolution_backward_weights(pd);
    p->bww_scratch = scratchpad_of(pd.scratchpad_desc());
    p->bww_x = make_operand(x_plain, pd.src_desc(), false, slot_src, false);
    p->bww_dy = make_operand(y_plain, pd.diff_dst_desc(), false, slot_dst, false);
    p->bww_dw = make_operand(w_plain, pd.diff_weights_desc(), true, slot_weights, true);
    if (g.bias) {
      p->db_scratch = tensor::empty({g.k});
      p->bww_db = memory(b_plain, eng, p->db_scratch.data());
    }
  }

  const dnnl::engine& eng;
  const conv2d_geometry& g;
  const memory::data_type in;  // the inputs' type: bf16 copies made by the reorders, or fp32 (results: fp32)
  const dims x_dims, w_dims, y_dims, strides, pads;
  const memory::desc x_plain, w_plain, y_plain, b_plain, no_bias;
  const dnnl::algorithm preferred;
  dnnl::primitive_attr user_scratchpad;
  std::unique_ptr<primitives> p = std::make_unique<primitives>();

 private:
  /// A primitive's scratchpad: a view of the engine's, bound before each execution.
  memory scratchpad_of(const memory::desc& wanted) {
    p->scratchpad_bytes = std::max(p->scratchpad_bytes, wanted.get_size());
    return memory(wanted, eng, DNNL_MEMORY_NONE);
  }

  /// The caller's buffer in `user_desc` and, when the primitive wants `wanted` (or the result is
  /// added into the caller's), a copy in workspace slot `slot` with the reorder between them.
  operand make_operand(const memory::desc& user_desc, const memory::desc& wanted, bool is_output, int slot,
                       bool accumulate) {
    operand o;
    o.user = memory(user_desc, eng, DNNL_MEMORY_NONE);
    if (wanted == user_desc && !accumulate) {
      o.internal = o.user;
      return o;
    }
    o.internal = memory(wanted, eng, DNNL_MEMORY_NONE);
    o.slot = slot;
    p->slot_bytes[slot] = std::max(p->slot_bytes[slot], wanted.get_size());
    dnnl::primitive_attr attr = user_scratchpad;
    if (accumulate) {
      dnnl::post_ops sum;
      sum.append_sum(1.f);
      attr.set_post_ops(sum);
    }
    const dnnl::reorder::primitive_desc pd = is_output
                                                 ? dnnl::reorder::primitive_desc(o.internal, o.user, attr)
                                                 : dnnl::reorder::primitive_desc(o.user, o.internal, attr);
    o.convert = dnnl::reorder(pd);
    o.scratch = scratchpad_of(pd.scratchpad_desc());
    return o;
  }
};

conv2d_engine::primitives& conv2d_engine::lookup(const conv2d_geometry& g) {
  auto found = cache_.find(g);
  if (found != cache_.end()) return *found->second;
  staged_dy_ = nullptr;  // the workspace may be reallocated below
  primitives_builder build(dnnl_->engine, g, bf16_operands_, winograd_);
  primitives& p = *build.p;
  try {
    cpu::omp_threads_scope team(threads_);  // primitives are tuned for the team they will run on
    const auto fwd = build.forward();
    // Where oneDNN has no Winograd kernel for a geometry where Winograd pays (a CPU without
    // AVX-512), petra's own runs all three passes where it pays in turn (from 64 channels): no
    // backward primitives and no workspace for them.
    if (own_winograd_ && winograd_pays(g) && cpu::winograd_conv::pays(g) &&
        p.forward_kernel.find("wino") == std::string::npos) {
      p.own_winograd = true;
      p.forward_kernel = "petra_wino_4x3";
      return *cache_.emplace(g, std::move(build.p)).first->second;
    }
    build.backward_data(fwd);
    build.backward_weights(fwd);
  } catch (const dnnl::error& e) {
    throw std::runtime_error("conv2d: oneDNN could not build a convolution for " + g.str() + ": " + e.what());
  }
  for (int slot = 0; slot < 3; ++slot) {
    const auto floats = static_cast<int64_t>((p.slot_bytes[slot] + sizeof(float) - 1) / sizeof(float));
    if (floats > 0 && (!workspace_[slot].defined() || workspace_[slot].numel() < floats))
      workspace_[slot] = tensor::empty({floats});
  }
  const auto scratch_floats = static_cast<int64_t>((p.scratchpad_bytes + sizeof(float) - 1) / sizeof(float));
  if (scratch_floats > 0 && (!scratchpad_.defined() || scratchpad_.numel() < scratch_floats))
    scratchpad_ = tensor::empty({scratch_floats});
  return *cache_.emplace(g, std::move(build.p)).first->second;
}

std::string conv2d_engine::forward_kernel(const conv2d_geometry& g) { return lookup(g).forward_kernel; }

void conv2d_engine::bind(operand& o, const void* user_data) {
  o.user.set_data_handle(const_cast<void*>(user_data));  // inputs are only read
  if (o.slot >= 0) o.internal.set_data_handle(workspace_[o.slot].data());
}

void conv2d_engine::weights_in(operand& o, const tensor& w) {
  bind(o, w.data());
  if (o.slot < 0) return;
  if (!keep_converted_weights_) {
    stage_in(o);
    return;
  }
  const memory& copy = dnnl_->weights.find(w, o.internal.get_desc(), dnnl_->engine, [&](const memory& to) {
    std::unordered_map<int, memory> args{{DNNL_ARG_FROM, o.user}, {DNNL_ARG_TO, to}};
    with_scratchpad(o.scratch, scratchpad_, args);
    o.convert.execute(dnnl_->stream, args);
  });
  o.internal.set_data_handle(copy.get_data_handle());
}

void conv2d_engine::stage_in(operand& o) {
  if (o.slot < 0) return;
  std::unordered_map<int, memory> args{{DNNL_ARG_FROM, o.user}, {DNNL_ARG_TO, o.internal}};
  with_scratchpad(o.scratch, scratchpad_, args);
  o.convert.execute(dnnl_->stream, args);
}

void conv2d_engine::stage_out(operand& o) {
  if (o.slot < 0) return;
  std::unordered_map<int, memory> args{{DNNL_ARG_FROM, o.internal}, {DNNL_ARG_TO, o.user}};
  with_scratchpad(o.scratch, scratchpad_, args);
  o.convert.execute(dnnl_->stream, args);
}

void conv2d_engine::forward(const conv2d_geometry& g, const float* x, const tensor& w, const float* b,
                            float* y) {
  primitives& p = lookup(g);
  staged_dy_ = nullptr;  // y overwrites the dy slot
  if (p.own_winograd) {
    own_winograd_->forward(g, x, w.data(), b, y, threads_);
    return;
  }
  cpu::omp_threads_scope team(threads_);
  bind(p.fwd_x, x);
  bind(p.fwd_y, y);
  stage_in(p.fwd_x);
  weights_in(p.fwd_w, w);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, p.fwd_x.internal},
                                       {DNNL_ARG_WEIGHTS, p.fwd_w.internal},
                                       {DNNL_ARG_DST, p.fwd_y.internal}};
  if (g.bias) {
    p.fwd_b.set_data_handle(const_cast<float*>(b));
    args.emplace(DNNL_ARG_BIAS, p.fwd_b);
  }
  with_scratchpad(p.fwd_scratch, scratchpad_, args);
  p.forward.execute(dnnl_->stream, args);
  stage_out(p.fwd_y);
  dnnl_->stream.wait();
}

void conv2d_engine::backward_data(const conv2d_geometry& g, const float* dy, const tensor& w, float* dx) {
  primitives& p = lookup(g);
  if (p.own_winograd) {
    staged_dy_ = nullptr;
    own_winograd_->backward_data(g, dy, w.data(), dx, threads_);
    return;
  }
  cpu::omp_threads_scope team(threads_);
  bind(p.bwd_dy, dy);
  bind(p.bwd_dx, dx);
  // A layer's backward runs backward_filter then backward_data on the same dy: when both
  // want it in the same layout, the copy backward_filter made is still in its slot.
  const bool dy_staged = staged_dy_ == dy && p.bwd_dy.slot == slot_dst &&
                         p.bwd_dy.internal.get_desc() == staged_as_->internal.get_desc();
  staged_dy_ = nullptr;
  if (!dy_staged) stage_in(p.bwd_dy);
  weights_in(p.bwd_w, w);
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, p.bwd_dy.internal},
                                       {DNNL_ARG_WEIGHTS, p.bwd_w.internal},
                                       {DNNL_ARG_DIFF_SRC, p.bwd_dx.internal}};
  with_scratchpad(p.bwd_scratch, scratchpad_, args);
  p.backward_data.execute(dnnl_->stream, args);
  stage_out(p.bwd_dx);
  dnnl_->stream.wait();
}

void conv2d_engine::backward_filter(const conv2d_geometry& g, const float* x, const float* dy, float* dw,
                                    float* db) {
  primitives& p = lookup(g);
  if (p.own_winograd) {
    staged_dy_ = nullptr;
    own_winograd_->backward_filter(g, x, dy, dw, db, threads_);
    return;
  }
  cpu::omp_threads_scope team(threads_);
  bind(p.bww_x, x);
  bind(p.bww_dy, dy);
  bind(p.bww_dw, dw);
  stage_in(p.bww_x);
  stage_in(p.bww_dy);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, p.bww_x.internal},
                                       {DNNL_ARG_DIFF_DST, p.bww_dy.internal},
                                       {DNNL_ARG_DIFF_WEIGHTS, p.bww_dw.internal}};
  if (g.bias) args.emplace(DNNL_ARG_DIFF_BIAS, p.bww_db);
  with_scratchpad(p.bww_scratch, scratchpad_, args);
  p.backward_weights.execute(dnnl_->stream, args);
  stage_out(p.bww_dw);  // a reorder with a sum post-op: dw += the new gradient
  dnnl_->stream.wait();
  if (p.bww_dy.slot == slot_dst) {
    staged_dy_ = dy;
    staged_as_ = &p.bww_dy;
  }
  if (g.bias) {
    const float* fresh = p.db_scratch.data();
    for (int64_t k = 0; k < g.k; ++k) db[k] += fresh[k];
  }
}

}  // namespace petra
