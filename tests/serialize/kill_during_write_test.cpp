// kill -9 of a process in the middle of writing a checkpoint never leaves a torn one: the file
// at the checkpoint's path always loads, holding the old tensors or the new ones.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "compute/serialize/safetensors.hpp"

using namespace petra;
namespace fs = std::filesystem;

namespace {

named_tensors checkpoint_of(float value) {
  tensor t = tensor::empty({8, 1024, 1024});  // 32 MB: a write takes a while
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = value;
  return {{"param/w", t}};
}

}  // namespace

TEST_CASE("kill -9 during checkpoint writes: the checkpoint is always whole") {
  const fs::path dir = fs::temp_directory_path() / ("petra-torn-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "checkpoint.safetensors").string();
  save_safetensors(path, checkpoint_of(0.f));
  for (int round = 0; round < 6; ++round) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      for (float v = 1;; ++v) save_safetensors(path, checkpoint_of(v));  // until killed
    }
    usleep(static_cast<useconds_t>(20000 + 37000 * round));  // at different points of a write
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    const safetensors_file file = load_safetensors(path);  // throws if torn
    const tensor& w = file.find("param/w");
    REQUIRE(w.numel() == 8 * 1024 * 1024);
    const float first = w.data()[0];
    CHECK(w.data()[w.numel() - 1] == first);  // one write's values throughout
  }
  fs::remove_all(dir);
}
