// Bad input a new user typed: every one exits 2 with a message naming the flag or key, and flags
// of model-info and memory-model are checked, not dropped.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/petra_command.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using petra::testing::run_petra;
using petra::testing::scratch_dir;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a run directory that cannot be made is bad input: exit 2, output.dir/output.name named") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  std::ofstream(out.path / "afile").close();  // an empty file where the run directory would go
  auto named_file =
      run_petra("train ci_smoke --set output.dir=" + out.path.string() + " --set output.name=afile");
  INFO(named_file.output);
  CHECK(named_file.code == 2);
  CHECK(has(named_file.output, "output.name"));
  CHECK(fs::is_regular_file(out.path / "afile"));

  auto dir_is_file =
      run_petra("train ci_smoke --set output.dir=" + (out.path / "afile").string() + " --set output.name=x");
  INFO(dir_is_file.output);
  CHECK(dir_is_file.code == 2);
  CHECK(has(dir_is_file.output, "output.dir"));

  auto unwritable = run_petra("train ci_smoke --set output.dir=/proc/nope --set output.name=x");
  INFO(unwritable.output);
  CHECK(unwritable.code == 2);
  CHECK(has(unwritable.output, "output.dir"));
  CHECK_FALSE(fs::exists("/proc/nope"));
  CHECK(out.entries() == 1);  // only afile: nothing written
}

TEST_CASE("petra node --listen on a port in use: exit 2 naming --listen") {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(s, 1) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const std::string port = std::to_string(ntohs(a.sin_port));
  auto r = run_petra("node --listen 127.0.0.1:" + port);
  ::close(s);
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(has(r.output, "--listen 127.0.0.1:" + port));
}

TEST_CASE("model-info and memory-model refuse counts below 1, naming the flag") {
  for (const char* command : {"model-info", "memory-model"}) {
    for (const char* flag : {"--classes -3", "--micro-batch -4", "--k 0", "--classes 0", "--input 1,0,28"}) {
      auto r = run_petra(std::string(command) + " default " + flag);
      INFO(command << " " << flag << ": " << r.output);
      CHECK(r.code == 2);
      CHECK(has(r.output, std::string(flag).substr(0, std::string(flag).find(' '))));
      CHECK_FALSE(has(r.output, "1797693134"));
    }
  }
  auto fine = run_petra("model-info default --classes 3 --micro-batch 4 --k 2");
  INFO(fine.output);
  CHECK(fine.code == 0);
  CHECK(has(fine.output, "3 classes"));
}

TEST_CASE("model-info --arch tiny takes the 1x28x28 input the tiny presets train on") {
  auto r = run_petra("model-info --arch tiny");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(has(r.output, "input 1×28×28"));
}

TEST_CASE("petra --version prints the project's version, and an unknown subcommand is named") {
  auto version = run_petra("--version");
  INFO(version.output);
  CHECK(version.code == 0);
  CHECK(has(version.output, std::string("petra ") + PETRA_VERSION));

  auto unknown = run_petra("frobnicate");
  INFO(unknown.output);
  CHECK(unknown.code == 2);
  CHECK(has(unknown.output, "unknown subcommand 'frobnicate'"));
  CHECK(has(unknown.output, "train"));
}

TEST_CASE("out-of-range numbers of node and migrate say what the flag takes") {
  for (const char* args : {"node --threads 0", "migrate /nonexistent --stage 1 --to cpu --timeout -1",
                           "node --silence-timeout 0"}) {
    auto r = run_petra(args);
    INFO(args << ": " << r.output);
    CHECK(r.code == 2);
    CHECK_FALSE(has(r.output, "1797693134"));
    CHECK_FALSE(has(r.output, "0.000000"));
  }
  auto threads = run_petra("node --threads 0");
  CHECK(has(threads.output, "--threads: expected an integer of at least 1, got '0'"));
}

TEST_CASE("a config indented with tabs: the tab and its line are named") {
  scratch_dir dir;
  const fs::path file = dir.path / "tabs.yaml";
  std::ofstream(file) << "# a comment\ntraining:\n\tepochs: 3\n";
  auto r = run_petra("model-info " + file.string());
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(has(r.output, file.string() + ":3: a tab in the indentation"));
}

TEST_CASE("--trace refused by the simulator names --trace, the flag typed") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  auto r = run_petra("train ci_smoke --trace --set output.dir=" + out.path.string());
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(has(r.output, "petra train: --trace (output.trace): runtime.mode simulate"));
  CHECK(out.entries() == 0);
}

TEST_CASE("eval of a snapshot's stage file says what the file is and what to give instead") {
  scratch_dir dir;
  const fs::path part = dir.path / "run" / "snapshots" / "s1" / "stage-1.safetensors";
  fs::create_directories(part.parent_path());
  {
    // The smallest safetensors file with the metadata of a snapshot part and no tensor.
    const std::string header = R"({"__metadata__":{"stage":"{}"}})";
    std::ofstream out(part, std::ios::binary);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header;
  }
  auto r = run_petra("eval " + part.string());
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(has(r.output, "one stage's part of a snapshot"));
  CHECK(has(r.output, "petra eval " + (dir.path / "run").string()));
}

TEST_CASE("memory-model of a small model prints its table in MB, not rows of 0.0 GB") {
  auto r = run_petra("memory-model ci_smoke");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(has(r.output, "paper (MB)"));
  CHECK_FALSE(has(r.output, " 0.0 "));
}

TEST_CASE("pipeline.threads given one number names the list it takes and runtime.threads, the scalar") {
  auto r = run_petra("model-info default --set pipeline.threads=2");
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(has(r.output,
            "pipeline.threads in --set pipeline.threads=2: expected a list of compute threads per stage"));
  CHECK(has(r.output, "runtime.threads"));
}

TEST_CASE("cuda:0 on a machine without a GPU or driver says so, not 'driver version is insufficient'") {
  if (fs::exists("/dev/nvidia0") || fs::exists("/dev/nvidiactl"))
    PETRA_SKIP("this machine has an NVIDIA device: the message of a machine without one cannot show");
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  auto r = run_petra(
      "train ci_smoke --set runtime.mode=lockstep --set 'pipeline.devices=[cuda:0,cpu,cpu,cpu,cpu]'"
      " --set output.dir=" +
      out.path.string());
  INFO(r.output);
  if (has(r.output, "this build has no CUDA backend")) PETRA_SKIP("this build has no CUDA backend");
  CHECK(r.code == 2);
  CHECK(has(r.output, "pipeline.devices[0] (stage 1): device cuda:0 is not usable: no GPU"));
  CHECK(out.entries() == 0);
}
