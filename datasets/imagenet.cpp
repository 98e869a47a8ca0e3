// ImageNet folders: listing and checking the tree, and per-sample decode → crop window → resample.
#include "datasets/imagenet.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "datasets/counter_rng.hpp"
#include "datasets/dataset.hpp"
#include "datasets/jpeg.hpp"

namespace petra::data {
namespace fs = std::filesystem;

namespace {

const char* const layout_hint =
    "; expected the ImageFolder layout <root>/train/<wnid>/*.JPEG and <root>/val/<wnid>/*.JPEG (the val "
    "images sorted into one folder per class) with data.path = <root>";

bool is_jpeg_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpeg" || ext == ".jpg";
}

// The sub-directories of `dir`, sorted by name; dataset_error when `dir` is not a directory.
std::vector<std::string> class_folders(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw dataset_error(dir.string() + ": split directory not found" + layout_hint);
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  if (names.empty())
    throw dataset_error(dir.string() + ": empty split, it holds no class folders" + layout_hint);
  return names;
}

struct file_closer {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// The whole file into `bytes`; "" on success, else why not.
std::string read_into(const std::string& path, std::vector<uint8_t>& bytes) {
  std::unique_ptr<std::FILE, file_closer> file(std::fopen(path.c_str(), "rb"));
  if (!file) return std::string("cannot open: ") + std::strerror(errno);
  bytes.clear();
  uint8_t chunk[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(chunk, 1, sizeof chunk, file.get());
    bytes.insert(bytes.end(), chunk, chunk + got);
    if (got < sizeof chunk) break;
  }
  if (std::ferror(file.get())) return std::string("read error: ") + std::strerror(errno);
  if (bytes.empty()) return "empty file";
  return "";
}

}  // namespace

void check_imagenet_transform(const imagenet_transform& t) {
  if (t.crop_size < 1) {
    throw std::invalid_argument("imagenet crop_size = " + std::to_string(t.crop_size) + ", expected ≥ 1");
  }
  if (t.resize_size < t.crop_size) {
    throw std::invalid_argument("imagenet resize_size = " + std::to_string(t.resize_size) +
                                " is below crop_size = " + std::to_string(t.crop_size) +
                                ": the eval center crop is cut from the resized image");
  }
  check_resized_crop_bounds(t.crop);
  if (t.mean.size() != 3 || t.std.size() != 3) {
    throw std::invalid_argument("imagenet normalisation: mean has " + std::to_string(t.mean.size()) +
                                " entries and std " + std::to_string(t.std.size()) +
                                ", expected 3 each (R, G, B); set data.mean and data.std");
  }
  for (std::size_t c = 0; c < 3; ++c) {
    if (!std::isfinite(t.mean[c]) || !(t.std[c] > 0) || !std::isfinite(t.std[c])) {
      throw std::invalid_argument("imagenet normalisation: channel " + std::to_string(c) + " has mean " +
                                  std::to_string(t.mean[c]) + " and std " + std::to_string(t.std[c]) +
                                  ", expected a finite mean and a finite std > 0");
    }
  }
}

imagenet_source::imagenet_source(const std::string& root, bool train_split, imagenet_transform transform,
                                 bad_image_policy on_bad_image, int64_t limit)
    : transform_(std::move(transform)), on_bad_image_(on_bad_image) {
  check_imagenet_transform(transform_);
  norm_ = normalisation(transform_.mean, transform_.std);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw dataset_error("imagenet: data.path '" + root + "' " +
                        (fs::exists(root, ec) ? "is not a directory" : "does not exist") + layout_hint);
  }
  const std::string split = train_split ? "train" : "val";
  name_ = "imagenet/" + split;
  const fs::path split_dir = fs::path(root) / split;
  split_dir_ = split_dir.string();
  classes_ = class_folders(fs::path(root) / "train");
  if (!train_split) {
    const std::vector<std::string> present = class_folders(split_dir);
    for (const std::string& wnid : classes_) {
      if (!std::binary_search(present.begin(), present.end(), wnid)) {
        throw dataset_error((split_dir / wnid).string() + ": class folder missing (train/ has class " + wnid +
                            "); every class of train/ needs its folder in val/" + layout_hint);
      }
    }
    for (const std::string& wnid : present) {
      if (!std::binary_search(classes_.begin(), classes_.end(), wnid)) {
        throw dataset_error((split_dir / wnid).string() + ": not a class of " +
                            (fs::path(root) / "train").string() +
                            "; val/ must hold the same class folders as train/");
      }
    }
  }

  std::vector<std::string> files;
  for (std::size_t label = 0; label < classes_.size(); ++label) {
    const fs::path class_dir = split_dir / classes_[label];
    files.clear();
    for (const auto& entry : fs::directory_iterator(class_dir)) {
      if (!entry.is_directory() && is_jpeg_name(entry.path()))
        files.push_back(entry.path().filename().string());
    }
    if (files.empty()) {
      throw dataset_error(class_dir.string() + ": class folder holds no images (*.JPEG, *.jpg)" +
                          layout_hint);
    }
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      file_names_ += file;
      name_ends_.push_back(file_names_.size());
      labels_.push_back(static_cast<int32_t>(label));
    }
  }

  if (limit > 0 && limit < count()) {
    const int64_t n = count();
    std::string names;
    std::vector<std::size_t> ends;
    std::vector<int32_t> labels;
    for (int64_t k = 0; k < limit; ++k) {
      const int64_t i = k * n / limit;
      const std::size_t begin = i == 0 ? 0 : name_ends_[static_cast<std::size_t>(i - 1)];
      names.append(file_names_, begin, name_ends_[static_cast<std::size_t>(i)] - begin);
      ends.push_back(names.size());
      labels.push_back(labels_[static_cast<std::size_t>(i)]);
    }
    file_names_ = std::move(names);
    name_ends_ = std::move(ends);
    labels_ = std::move(labels);
  }
}

int32_t imagenet_source::label(int64_t index) const {
  if (index < 0 || index >= count()) {
    throw std::out_of_range(name_ + ": label index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(count()) + ")");
  }
  return labels_[static_cast<std::size_t>(index)];
}

std::string imagenet_source::path(int64_t index) const {
  const int32_t k = label(index);
  const auto i = static_cast<std::size_t>(index);
  const std::size_t begin = i == 0 ? 0 : name_ends_[i - 1];
  return split_dir_ + "/" + classes_[static_cast<std::size_t>(k)] + "/" +
         file_names_.substr(begin, name_ends_[i] - begin);
}

void imagenet_source::fill_checked(const int64_t* indices, int64_t count, bool train, uint64_t seed,
                                   int epoch, int64_t first_position, float* images, int32_t* labels) const {
  jpeg_decoder decoder;
  std::vector<uint8_t> file;
  rgb_image image;
  const int crop = transform_.crop_size;
  const int64_t n = this->count();
  for (int64_t i = 0; i < count; ++i) {
    float* out = images + i * shape().size();
    int64_t index = indices[i];
    for (int64_t tried = 0;; ++tried, index = (index + 1) % n) {
      if (tried == n) {
        throw dataset_error(split_dir_ + ": none of the " + std::to_string(n) +
                            " images could be decoded; see the bad images reported");
      }
      if (bad_.contains(index)) continue;
      const std::string file_path = path(index);
      std::string reason = read_into(file_path, file);
      if (reason.empty()) {
        try {
          const jpeg_header header = decoder.read_header(file.data(), file.size());
          counter_rng rng(seed, rng_stream::augment, epoch, first_position + i);
          const bool flip = train && transform_.flip && (rng.next() >> 63) != 0;
          const crop_box box =
              train ? draw_resized_crop(header.width, header.height, transform_.crop, rng)
                    : center_crop_box(header.width, header.height, transform_.resize_size, crop);
          const jpeg_scale scale = choose_jpeg_scale(box.width, box.height, crop, crop);
          decoder.decode(file.data(), file.size(), scale, image);
          // The window in the decoded image: scaled pixel j covers source pixels [j/s, (j+1)/s), whatever
          // the rounding up of the scaled size; kept inside the image.
          const double s = double(scale.num) / scale.denom;
          crop_box scaled{box.x * s, box.y * s, box.width * s, box.height * s};
          scaled.width = std::min(scaled.width, image.width - scaled.x);
          scaled.height = std::min(scaled.height, image.height - scaled.y);
          resample_to_chw(image, scaled, crop, crop, flip, norm_, out);
          labels[i] = labels_[static_cast<std::size_t>(index)];
          break;
        } catch (const jpeg_error& e) {
          reason = e.what();
        }
      }
      if (on_bad_image_ == bad_image_policy::fail) {
        throw dataset_error(
            file_path + ": bad image: " + reason +
            "; remove or replace the file, or set data.on_bad_image: skip to skip such files");
      }
      bad_.record({index, file_path, reason});
    }
  }
}

std::string write_class_index(const std::vector<std::string>& classes, const std::string& dir) {
  const fs::path target = fs::path(dir) / "classes.txt";
  const fs::path aside = fs::path(dir) / "classes.txt.tmp";
  {
    std::ofstream out(aside);
    if (!out)
      throw std::runtime_error(aside.string() + ": cannot write the class index (does " + dir + " exist?)");
    for (const std::string& name : classes) out << name << '\n';
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(aside, ec);
      throw std::runtime_error(aside.string() + ": write error while writing the class index");
    }
  }
  fs::rename(aside, target);
  return target.string();
}

}  // namespace petra::data
