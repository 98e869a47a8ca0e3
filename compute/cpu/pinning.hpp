// Pinning a compute thread and its OpenMP team (the threads oneDNN and the CPU kernels run on) to
// cores of their own, so that stages computing at the same time do not migrate onto each other.
#pragma once

#include <string>
#include <vector>

namespace petra::cpu {

/// Pins the calling thread and the OpenMP team it starts (cores.size() threads; the team's thread i,
/// the caller being thread 0, to cores[i]). libgomp keeps a team's threads for the thread that
/// started it, so later teams of up to that size run on the same pinned threads. False, with `why`,
/// when the system refuses a core (not in this process's affinity mask, say). No-op for no cores.
bool pin_compute_team(const std::vector<int>& cores, std::string* why);

/// The core each thread of a team of `threads` started by the calling thread runs on now, as its
/// affinity mask allows only one; -1 for a thread allowed on several.
std::vector<int> team_cores(int threads);

}  // namespace petra::cpu
