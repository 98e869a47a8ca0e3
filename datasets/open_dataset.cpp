// open_dataset: picks the reader and the source type for a kind.
#include "datasets/open_dataset.hpp"

#include <stdexcept>

#include "datasets/dataset.hpp"
#include "datasets/imagenet.hpp"
#include "datasets/in_memory_source.hpp"

namespace petra::data {

std::shared_ptr<const image_source> open_dataset(const dataset_spec& spec, bool train) {
  if (spec.kind == dataset_kind::imagenet) {
    imagenet_transform transform;
    transform.crop_size = spec.crop_size;
    transform.resize_size = spec.resize_size;
    transform.flip = spec.flip;
    transform.mean = spec.mean;
    transform.std = spec.std;
    return std::make_shared<imagenet_source>(spec.path, train, transform, spec.on_bad_image, spec.limit);
  }
  auto data = std::make_shared<dataset>(load_dataset(spec.kind, spec.path, train));
  if (spec.limit > 0) keep_first(*data, spec.limit);
  return std::make_shared<in_memory_source>(
      std::move(data), augment_options{spec.mean, spec.std, spec.crop_padding, spec.flip});
}

}  // namespace petra::data
