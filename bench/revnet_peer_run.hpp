// Runs bench/peer/revnet_peer.py (the PyTorch peer of the CPU benchmarks) with /usr/bin/python3
// and reads the JSON line it prints last. Needs PETRA_SOURCE_DIR.
#pragma once

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace petra::bench {

/// `revnet_peer.py ARGUMENTS`: true and its last JSON line in `out`; false and why in `why` when it
/// could not start, failed, or printed no JSON.
inline bool run_revnet_peer(const std::string& arguments, nlohmann::json& out, std::string& why) {
  const std::string command = "/usr/bin/python3 " + std::string(PETRA_SOURCE_DIR) +
                              "/bench/peer/revnet_peer.py " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    why = "cannot start /usr/bin/python3";
    return false;
  }
  std::string text;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) text += buffer.data();
  const int status = pclose(pipe);
  const auto brace = text.rfind('{');
  if (status != 0 || brace == std::string::npos) {
    why = "peer failed (is python3-torch installed? PETRA_WITH_PEER=1 deploy/install-deps.sh): " +
          text.substr(0, 300);
    return false;
  }
  out = nlohmann::json::parse(text.substr(brace));
  return true;
}

}  // namespace petra::bench
