// The name of every op of the backend interface (compute/backend.hpp), kept beside it: the op table
// of tests/backends runs each on every backend and fails when one of these has no case there.
#pragma once

#include <string_view>

namespace petra {

/// Every method of `backend` that makes, moves or computes tensors (where, name and
/// device_bytes_in_use only describe a backend). An op added to the interface gets its name here.
inline constexpr std::string_view backend_op_names[] = {"empty",
                                                        "zeros",
                                                        "from_host",
                                                        "to_host",
                                                        "copy",
                                                        "fill_zero",
                                                        "synchronize",
                                                        "export_for",
                                                        "import",
                                                        "conv2d_forward",
                                                        "conv2d_backward_data",
                                                        "conv2d_backward_filter",
                                                        "batch_norm_forward_train",
                                                        "batch_norm_update_running",
                                                        "batch_norm_forward_eval",
                                                        "batch_norm_backward",
                                                        "relu_forward",
                                                        "relu_backward",
                                                        "add",
                                                        "sub",
                                                        "add_inplace",
                                                        "max_pool2x2_forward",
                                                        "max_pool2x2_backward",
                                                        "max_pool2x2_jvp",
                                                        "global_avg_pool_forward",
                                                        "global_avg_pool_backward",
                                                        "linear_forward",
                                                        "linear_backward_data",
                                                        "linear_backward_weight",
                                                        "layer_norm_forward",
                                                        "layer_norm_backward",
                                                        "layer_norm_jvp",
                                                        "gelu_forward",
                                                        "gelu_backward",
                                                        "softmax_forward",
                                                        "softmax_backward",
                                                        "batched_matmul",
                                                        "batched_matmul_backward",
                                                        "token_mean_forward",
                                                        "token_mean_backward",
                                                        "scale",
                                                        "transpose12",
                                                        "split_channels",
                                                        "concat_channels",
                                                        "softmax_cross_entropy",
                                                        "softmax_cross_entropy_deferred",
                                                        "sgd_update",
                                                        "sgd_step",
                                                        "adamw_update",
                                                        "adamw_step"};

}  // namespace petra
