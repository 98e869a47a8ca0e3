// open_dataset: picks the reader and the source type for a kind.
#include "datasets/open_dataset.hpp"

#include <stdexcept>

#include "datasets/dataset.hpp"
#include "datasets/imagenet.hpp"
#include "datasets/in_memory_source.hpp"

namespace petra::data {

const char* dataset_kinds() { return "fashion-mnist, mnist, cifar10, imagenet32 or imagenet"; }

std::shared_ptr<const image_source> open_dataset(const dataset_spec& spec, bool train) {
  if (spec.kind == "imagenet") {
    imagenet_transform transform;
    transform.crop_size = spec.crop_size;
    transform.resize_size = spec.resize_size;
    transform.flip = spec.flip;
    transform.mean = spec.mean;
    transform.std = spec.std;
    return std::make_shared<imagenet_source>(spec.path, train, transform, spec.on_bad_image, spec.limit);
  }
  if (spec.kind != "fashion-mnist" && spec.kind != "mnist" && spec.kind != "cifar10" &&
      spec.kind != "imagenet32") {
    throw std::invalid_argument("unknown dataset kind '" + spec.kind + "': expected " + dataset_kinds());
  }
  auto data = std::make_shared<dataset>(load_dataset(spec.kind, spec.path, train));
  if (spec.limit > 0) keep_first(*data, spec.limit);
  return std::make_shared<in_memory_source>(
      std::move(data), augment_options{spec.mean, spec.std, spec.crop_padding, spec.flip});
}

}  // namespace petra::data
