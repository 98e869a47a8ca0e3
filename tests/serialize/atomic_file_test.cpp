// write_file_atomically: the target is always either its old content or the whole new one,
// and no temp file outlives a failure.
#include "compute/serialize/atomic_file.hpp"

#include <doctest/doctest.h>

#include <string>

#include "tests/serialize/scratch_directory.hpp"

using petra::write_file_atomically;
using petra::testing::file_size_limit;
using petra::testing::message_of;
using petra::testing::read_bytes;
using petra::testing::scratch_directory;
using petra::testing::write_bytes;
using names = std::vector<std::string>;

TEST_CASE("write_file_atomically writes the whole content and leaves nothing else behind") {
  scratch_directory dir;
  const std::string path = dir.file("model.ckpt");
  write_file_atomically(path, [](std::ostream& out) { out << "hello " << 42; });
  CHECK(read_bytes(path) == "hello 42");
  CHECK(dir.entries() == names{"model.ckpt"});

  // Large blocks bypass the stream buffer; the bytes must still arrive in order.
  const std::string big(200'000, 'x');
  write_file_atomically(path, [&](std::ostream& out) {
    out << "head";
    out.write(big.data(), static_cast<std::streamsize>(big.size()));
    out << "tail";
  });
  CHECK(read_bytes(path) == "head" + big + "tail");
  CHECK(dir.entries() == names{"model.ckpt"});
}

TEST_CASE("a fill callback that throws leaves neither a target nor a temp file") {
  scratch_directory dir;
  const std::string path = dir.file("model.ckpt");
  const std::string message = message_of([&] {
    write_file_atomically(path, [](std::ostream& out) {
      out << std::string(100'000, 'y');  // some bytes already reached the temp file
      throw std::runtime_error("serializer broke");
    });
  });
  CHECK(message.find(path) != std::string::npos);
  CHECK(message.find("serializer broke") != std::string::npos);
  CHECK(dir.entries().empty());
}

TEST_CASE("a failed overwrite keeps the old checkpoint intact") {
  scratch_directory dir;
  const std::string path = dir.file("model.ckpt");
  write_bytes(path, "old checkpoint");

  SUBCASE("the fill callback throws") {
    CHECK_THROWS_AS(write_file_atomically(path,
                                          [](std::ostream& out) {
                                            out << "new but partial";
                                            throw std::logic_error("interrupted");
                                          }),
                    std::runtime_error);
  }
  SUBCASE("the fill callback leaves the stream bad") {
    const std::string message = message_of([&] {
      write_file_atomically(path, [](std::ostream& out) {
        out << "new";
        out.setstate(std::ios::badbit);
      });
    });
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("failed state") != std::string::npos);
  }
  SUBCASE("the disk fills up mid-write") {
    std::string message;
    {
      file_size_limit limit(64 * 1024);
      message = message_of([&] {
        write_file_atomically(path, [](std::ostream& out) { out << std::string(1'000'000, 'z'); });
      });
    }
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("write error") != std::string::npos);
  }
  CHECK(read_bytes(path) == "old checkpoint");
  CHECK(dir.entries() == names{"model.ckpt"});
}

TEST_CASE("write_file_atomically names the path when the target cannot be made") {
  scratch_directory dir;
  SUBCASE("the directory does not exist") {
    const std::string path = dir.file("missing/model.ckpt");
    const std::string message =
        message_of([&] { write_file_atomically(path, [](std::ostream& out) { out << 1; }); });
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("directory exists") != std::string::npos);
  }
  SUBCASE("the target is a directory") {
    const std::string path = dir.file("occupied");
    std::filesystem::create_directory(path);
    const std::string message =
        message_of([&] { write_file_atomically(path, [](std::ostream& out) { out << 1; }); });
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("renaming") != std::string::npos);
    CHECK(dir.entries() == names{"occupied"});
  }
  SUBCASE("the path is empty") {
    CHECK_THROWS_AS(write_file_atomically("", [](std::ostream&) {}), std::invalid_argument);
  }
}

TEST_CASE("a relative path in the working directory works") {
  scratch_directory dir;
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.file(""));
  write_file_atomically("relative.bin", [](std::ostream& out) { out << "ok"; });
  std::filesystem::current_path(previous);
  CHECK(read_bytes(dir.file("relative.bin")) == "ok");
}
