// How many compute threads each stage's backend gets, and on which cores: the machine's cores are
// split over the CPU stages. When they fit (one core or more each), every CPU stage owns its threads
// (its actor has an OS thread of its own) and the stages compute at the same time; when there are
// more stages than cores, they take turns on CAF's scheduler, one worker per core.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace petra {

/// Stage j's device is the CPU (pipeline.devices[j], or none given).
bool cpu_stage(const config::run_config& c, std::size_t j);

/// The CPUs this process may run on (its affinity mask; at least 1).
int usable_cores();

/// Stage j's compute threads: pipeline.threads[j] when given; else this machine's `cores` split
/// evenly over the pipeline's CPU stages (every stage whose device is cpu, wherever it is placed, so
/// that a stage gets the same count in one process and over nodes on one host), at least 1. Stages
/// on other devices get 1 (a GPU stage's host work is one thread; sim devices have their own).
int stage_threads(const config::run_config& c, std::size_t j, int cores);

/// Per stage, the compute threads it runs on this process's CPU: stage_threads for a CPU stage
/// placed in this process, 0 for the others (other devices, `petra node`s).
std::vector<int> local_cpu_threads(const config::run_config& c, int cores);

/// Whether the CPU stages take turns on CAF's scheduler instead of owning OS threads: when their
/// compute threads (stage_threads, over every CPU stage wherever placed) outnumber `cores` and
/// runtime.pin_threads is off. Owning threads there would put more threads than cores at once on
/// the machine, each stage preempted in the middle of its ops; taking turns runs a stage's work
/// to its end. Device stages always own their thread.
bool stages_take_turns(const config::run_config& c, int cores);

/// The size of this process's CAF scheduler: runtime.threads, and at least `cores` when the CPU
/// stages take turns on it (so that one stage can compute per core).
int scheduler_threads(const config::run_config& c, int cores);

/// The size of a `petra node`'s CAF scheduler: `given` (--threads) when positive; else one thread per
/// core, at least 2. A node starts before it knows its stages: where they take turns
/// (stages_take_turns), one stage computes per scheduler thread, so the default lets them use every
/// core; where they own threads, the scheduler's idle threads sleep.
int node_scheduler_threads(int given, int cores);

/// The cores stage j's threads are pinned to with runtime.pin_threads: the CPU stages take
/// consecutive runs of the machine's `cores` in stage order, wherever they are placed (so that nodes
/// on one host pin to distinct cores), wrapping around when they ask for more than there are; empty
/// for stages on other devices, or when pinning is off.
std::vector<int> stage_cores(const config::run_config& c, std::size_t j, int cores);

/// Refuses (config::config_error naming pipeline.threads[j]) a CPU stage in this process that asks
/// for more threads than the machine's `cores`: it could never run them at once.
void check_stage_threads(const config::run_config& c, int cores);

/// The lines a run prints at its start about its compute threads: the split (and whether it was the
/// default), and a warning when pipeline.threads asks for more threads on the local CPU stages than
/// there are cores.
std::vector<std::string> describe_stage_threads(const config::run_config& c, int cores);

}  // namespace petra
