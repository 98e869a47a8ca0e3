// ImageNet as folders of JPEGs (torchvision ImageFolder's layout: <root>/train/<wnid>/*.JPEG and
// <root>/val/<wnid>/*.JPEG), decoded on demand: 1.28 M files cannot live in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/image_source.hpp"
#include "datasets/image_transforms.hpp"

namespace petra::data {

/// The transforms: train = random-resized-crop to crop_size² + flip; eval = shorter side to
/// resize_size, center crop crop_size²; both normalised per channel with (x/255 − mean)/std.
struct imagenet_transform {
  int crop_size = 224;
  int resize_size = 256;
  resized_crop_bounds crop;
  bool flip = true;
  std::vector<float> mean = {0.485f, 0.456f, 0.406f};  // ImageNet's per-channel statistics
  std::vector<float> std = {0.229f, 0.224f, 0.225f};
};

/// Throws std::invalid_argument naming the bad value unless crop_size ≥ 1, resize_size ≥ crop_size,
/// the crop bounds are valid and mean/std hold 3 finite entries each, every std > 0.
void check_imagenet_transform(const imagenet_transform& transform);

/// One split of an ImageNet folder tree. Classes are the sub-folders of <root>/train sorted by name
/// (label k = k-th wnid), for both splits; files of a class are sorted by name. A file counts as an
/// image when its extension is .jpeg or .jpg (any case). The split must hold a folder for every
/// class and no other, and every class folder at least one image: otherwise dataset_error naming
/// the path.
class imagenet_source : public image_source {
 public:
  /// Lists <root>/train (train_split) or <root>/val. limit > 0 keeps `limit` samples evenly spread
  /// over the split (index ⌊k·count/limit⌋), so that every class stays represented.
  imagenet_source(const std::string& root, bool train_split, imagenet_transform transform,
                  bad_image_policy on_bad_image = bad_image_policy::skip, int64_t limit = 0);

  std::string name() const override { return name_; }
  int64_t count() const override { return static_cast<int64_t>(labels_.size()); }
  int num_classes() const override { return static_cast<int>(classes_.size()); }
  image_shape shape() const override { return {3, transform_.crop_size, transform_.crop_size}; }
  int32_t label(int64_t index) const override;
  std::vector<std::string> class_names() const override { return classes_; }
  std::vector<bad_image> bad_images(int64_t from = 0) const override { return bad_.entries(from); }
  int64_t bad_image_count() const override { return bad_.count(); }

  /// The file of sample `index`.
  std::string path(int64_t index) const;

 private:
  /// A bad image is replaced by the next index (cyclically) whose file decodes; its label comes with
  /// it, and its augmentation is still drawn from the position's generator.
  void fill_checked(const int64_t* indices, int64_t count, bool train, uint64_t seed, int epoch,
                    int64_t first_position, float* images, int32_t* labels) const override;

  std::string name_;
  std::string split_dir_;             // <root>/train or <root>/val
  std::vector<std::string> classes_;  // wnids, sorted
  std::string file_names_;            // every file name, concatenated
  std::vector<std::size_t> name_ends_;
  std::vector<int32_t> labels_;
  imagenet_transform transform_;
  channel_affine norm_;
  bad_image_policy on_bad_image_;
  mutable bad_image_log bad_;
};

/// Writes `classes` to <dir>/classes.txt, one name per line, line k (from 0) naming label k; the
/// file appears whole or not at all (written aside, then renamed). Returns its path.
std::string write_class_index(const std::vector<std::string>& classes, const std::string& dir);

}  // namespace petra::data
