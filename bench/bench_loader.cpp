// Loader throughput on ImageNet-size JPEGs: 500 images of 500×375 at quality 90 written to a temp
// dir, served by batch_loader with the train transform (random-resized-crop 224 + flip) and the
// eval transform (resize 256 + center crop 224) with 1 and 2 workers; medians of several passes.
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "datasets/batch_loader.hpp"
#include "datasets/imagenet.hpp"
#include "datasets/jpeg.hpp"

namespace fs = std::filesystem;
using namespace petra::data;

namespace {

constexpr int image_count = 500, width = 500, height = 375, quality = 90, classes = 10;
constexpr int passes = 5, micro_batch = 64;

// A photo-like image: smooth shading, a few soft shapes, fine texture and sensor-like noise, so that
// the JPEG holds about as much detail (and costs about as much to decode) as an ImageNet photo.
std::vector<uint8_t> photo(int seed) {
  std::vector<uint8_t> pixels(static_cast<std::size_t>(width) * height * 3);
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  auto noise = [&state] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return int(state % 61) - 30;
  };
  const double fx = 0.01 + 0.002 * (seed % 7), fy = 0.013 + 0.003 * (seed % 5);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double shade = 90 + 60 * std::sin(x * fx + seed) * std::cos(y * fy - seed);
      const double blob =
          70 * std::exp(-((x - 150 - seed % 200) * (x - 150 - seed % 200) + (y - 180) * (y - 180)) / 6000.0);
      const double texture = 22 * std::sin(x * 0.45 + y * 0.3) * std::sin(y * 0.52 - x * 0.17) +
                             12 * std::sin(x * 1.3 - y * 0.9 + seed) * std::cos(x * 0.21 + y * 1.1);
      for (int c = 0; c < 3; ++c) {
        const double v = shade + blob * (c == seed % 3 ? 1.0 : 0.3) + texture + 25 * c + noise();
        pixels[(static_cast<std::size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return pixels;
}

// Writes <root>/train/<class>/<i>.JPEG; returns the mean file size in bytes.
double write_images(const fs::path& root) {
  tjhandle handle = tjInitCompress();
  double bytes = 0;
  for (int i = 0; i < image_count; ++i) {
    const std::vector<uint8_t> pixels = photo(i);
    unsigned char* jpeg = nullptr;
    unsigned long size = 0;
    if (tjCompress2(handle, pixels.data(), width, 0, height, TJPF_RGB, &jpeg, &size, TJSAMP_420, quality,
                    0) != 0) {
      std::fprintf(stderr, "tjCompress2: %s\n", tjGetErrorStr2(handle));
      std::exit(1);
    }
    const fs::path dir = root / "train" / ("n" + std::to_string(10000 + i % classes));
    fs::create_directories(dir);
    std::ofstream(dir / (std::to_string(i) + ".JPEG"), std::ios::binary)
        .write(reinterpret_cast<char*>(jpeg), size);
    bytes += double(size);
    tjFree(jpeg);
  }
  tjDestroy(handle);
  return bytes / image_count;
}

// CPU seconds this process has used, all threads: a per-core rate that other load on the machine
// does not distort the way it distorts wall-clock rates.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five;
  in >> one >> five;
  return one + " " + five;
}

struct rate {
  double wall = 0;  // images per second of wall-clock time
  double cpu = 0;   // images per CPU-second (all threads of the process)
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Images per second of whole epochs through batch_loader: one warm-up epoch, then the medians of `passes`.
rate loader_rate(const std::shared_ptr<const image_source>& source, bool train, int workers) {
  batch_loader loader(source, {micro_batch, 0, train, 1, workers, 0});
  std::vector<double> wall, cpu;
  for (int epoch = 0; epoch <= passes; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    loader.start_epoch(epoch);
    int64_t served = 0;
    for (loaded_batch b; loader.next(b);) served += b.count;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (epoch > 0) {
      wall.push_back(double(served) / seconds);
      cpu.push_back(double(served) / (cpu_seconds() - cpu_start));
    }
  }
  return {median(wall), median(cpu)};
}

// Images per second of plain full-size decoding (files already in memory), one thread.
rate decode_rate(const imagenet_source& source) {
  std::vector<std::vector<uint8_t>> files;
  for (int64_t i = 0; i < source.count(); ++i) {
    std::ifstream in(source.path(i), std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  jpeg_decoder decoder;
  rgb_image image;
  std::vector<double> wall, cpu;
  for (int pass = 0; pass <= passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    for (const auto& file : files) decoder.decode(file.data(), file.size(), {1, 1}, image);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass > 0) {
      wall.push_back(double(files.size()) / seconds);
      cpu.push_back(double(files.size()) / (cpu_seconds() - cpu_start));
    }
  }
  return {median(wall), median(cpu)};
}

}  // namespace

int main(int argc, char** argv) {
  // bench_loader                 500 generated JPEGs in a temp dir, removed afterwards
  // bench_loader --keep DIR      the same, written to DIR and kept
  // bench_loader --data ROOT     500 images spread over ROOT/train of an existing ImageNet tree
  const std::string flag = argc >= 3 ? argv[1] : "";
  if (argc != 1 && !(argc == 3 && (flag == "--keep" || flag == "--data"))) {
    std::fprintf(stderr, "usage: bench_loader [--keep DIR | --data IMAGENET_ROOT]\n");
    return 2;
  }
  const bool generated = flag != "--data";
  const fs::path root =
      argc == 3 ? fs::path(argv[2])
                : fs::temp_directory_path() / ("petra-bench-loader-" + std::to_string(::getpid()));
  if (generated) {
    fs::remove_all(root / "train");
    std::printf("writing %d JPEGs of %d×%d at quality %d to %s ...\n", image_count, width, height, quality,
                root.string().c_str());
    const double mean_bytes = write_images(root);
    std::printf("mean file size %.1f KB\n\n", mean_bytes / 1024);
  }

  const auto source = std::make_shared<imagenet_source>(root.string(), true, imagenet_transform{},
                                                        bad_image_policy::skip, image_count);
  std::printf("load average before: %s\n\n", load_average().c_str());
  std::printf("%-40s %8s %10s %11s %14s\n", "transform", "workers", "images/s", "per worker",
              "per CPU-second");
  auto row = [](const char* name, int workers, rate r) {
    std::printf("%-40s %8d %10.0f %11.0f %14.0f\n", name, workers, r.wall, r.wall / workers, r.cpu);
  };
  row("full-size decode only (files in memory)", 1, decode_rate(*source));
  double train_per_core = 0;
  for (bool train : {true, false}) {
    for (int workers : {1, 2}) {
      const rate r = loader_rate(source, train, workers);
      if (train) train_per_core = std::max(train_per_core, r.cpu);
      row(train ? "train: random-resized-crop 224 + flip" : "eval: resize 256 + center crop 224", workers, r);
    }
  }
  std::printf(
      "\n(medians of %d epochs of %d images, micro-batches of %d, after one warm-up epoch; %u cores here;"
      " load average after: %s)\n",
      passes, image_count, micro_batch, std::thread::hardware_concurrency(), load_average().c_str());
  for (double target : {2000.0, 3000.0}) {
    std::printf(
        "a GPU stage consuming %.0f img/s needs %d decoding workers (train transform, %.0f images per "
        "CPU-second here)\n",
        target, static_cast<int>(std::ceil(target / train_per_core)), train_per_core);
  }
  if (generated && argc == 1) fs::remove_all(root);
  return 0;
}
