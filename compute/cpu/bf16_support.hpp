// Whether this CPU has bf16 instructions (AVX512-BF16 or AMX-BF16), read from /proc/cpuinfo.
#pragma once

#include <string>

namespace petra {

/// The flags of the first processor listed in /proc/cpuinfo, space-separated ("" when unreadable);
/// $PETRA_CPU_FLAGS instead where it is set (tests force "no bf16" with it; empty means no flags).
std::string cpu_flags();

/// Whether `flags` (as cpu_flags() gives them) name `flag`, a whole word.
bool has_cpu_flag(const std::string& flags, const std::string& flag);

/// "" when `flags` (as cpu_flags() gives them) name avx512_bf16 or amx_bf16; otherwise what is
/// missing, for a message ("neither avx512_bf16 nor amx_bf16 ...").
std::string missing_bf16_instructions(const std::string& flags);

}  // namespace petra
