// Consistent snapshots on disk: one safetensors file per stage (its state, what it holds in flight
// and the messages addressed to it across the cut) in snapshots/step-<n>/, then the manifest
// snapshot.json in the run directory, written atomically and last. A write killed at any point
// leaves the previous snapshot (the one the manifest names) whole.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "training/cut.hpp"

namespace petra {

/// A snapshot read back: the cut and the manifest's metadata (epoch, position, the phase it was
/// taken in, the runtime's own state of the epochs still open, ...).
struct snapshot {
  std::string manifest;  // its path
  std::map<std::string, std::string> metadata;
  std::shared_ptr<const pipeline_cut> cut;
};

/// A stage's part of a cut as named host tensors and JSON (what its file holds, what a stage actor
/// sends the coordinator).
struct encoded_stage_cut {
  std::vector<named_tensor> tensors;
  std::string meta;
};
encoded_stage_cut encode_stage_cut(const stage_cut& c);
/// The part of stage `expect` (0-based); throws std::runtime_error naming `where` when damaged.
stage_cut decode_stage_cut(const std::vector<named_tensor>& tensors, const std::string& meta,
                           std::size_t expect, const std::string& where);

/// The manifest's path in `run_dir`.
std::string snapshot_manifest(const std::string& run_dir);

/// Writes `cut` as snapshot `name` (e.g. "step-1200") of `run_dir`, the manifest last, then removes
/// older snapshot folders. Throws std::runtime_error naming the file that could not be written.
void write_snapshot(const std::string& run_dir, const std::string& name, const pipeline_cut& cut,
                    const std::map<std::string, std::string>& metadata);

/// Reads the snapshot the manifest of `run_dir` names, for a pipeline of `stage_count` stages;
/// throws std::runtime_error naming the file and what is wrong.
snapshot read_snapshot(const std::string& run_dir, std::size_t stage_count);

}  // namespace petra
