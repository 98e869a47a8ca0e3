// Forces the CPU flags that bf16 is judged by ($PETRA_CPU_FLAGS, read by cpu_flags()) for one
// scope: the "no bf16 instructions" machine, in this process and the petra it starts.
#pragma once

#include <cstdlib>
#include <string>

namespace petra::testing {

class forced_cpu_flags {
 public:
  explicit forced_cpu_flags(const std::string& flags) {
    if (const char* before = std::getenv("PETRA_CPU_FLAGS")) before_ = before, had_ = true;
    ::setenv("PETRA_CPU_FLAGS", flags.c_str(), 1);
  }
  ~forced_cpu_flags() {
    if (had_)
      ::setenv("PETRA_CPU_FLAGS", before_.c_str(), 1);
    else
      ::unsetenv("PETRA_CPU_FLAGS");
  }
  forced_cpu_flags(const forced_cpu_flags&) = delete;
  forced_cpu_flags& operator=(const forced_cpu_flags&) = delete;

 private:
  std::string before_;
  bool had_ = false;
};

}  // namespace petra::testing
