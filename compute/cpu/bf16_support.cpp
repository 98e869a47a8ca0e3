// bf16 instructions of this CPU: oneDNN's bf16 kernels need AVX512-BF16 or AMX-BF16 to be fast and
// exact; without them runtime.precision: bf16 is refused (bf16_emulated runs anywhere).
#include "compute/cpu/bf16_support.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace petra {

std::string cpu_flags() {
  if (const char* forced = std::getenv("PETRA_CPU_FLAGS")) return forced;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || line.compare(0, 5, "flags") != 0) continue;
    return line.substr(colon + 1);
  }
  return "";
}

bool has_cpu_flag(const std::string& flags, const std::string& flag) {
  std::istringstream words(flags);
  std::string word;
  while (words >> word)
    if (word == flag) return true;
  return false;
}

std::string missing_bf16_instructions(const std::string& flags) {
  if (has_cpu_flag(flags, "avx512_bf16") || has_cpu_flag(flags, "amx_bf16")) return "";
  return "this CPU has neither AVX512-BF16 nor AMX-BF16 (no avx512_bf16 or amx_bf16 among the flags of "
         "/proc/cpuinfo)";
}

}  // namespace petra
