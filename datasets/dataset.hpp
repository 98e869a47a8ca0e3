// An in-memory image classification dataset (uint8 N×C×H×W plus int32 labels) and the
// entry point that loads one by kind: fashion-mnist, mnist, cifar10 or imagenet32.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace petra::data {

/// A missing, unreadable or corrupt dataset file; the message names the path, the problem and the fix.
class dataset_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Images as uint8 in N×C×H×W order; labels[i] ∈ [0, num_classes) for image i.
struct dataset {
  std::string name;  // e.g. "fashion-mnist/train"
  int64_t count = 0;
  int channels = 0, height = 0, width = 0;
  int num_classes = 0;
  std::vector<uint8_t> pixels;  // count·channels·height·width
  std::vector<int32_t> labels;  // count

  /// Bytes of one image: C·H·W.
  int64_t image_size() const { return int64_t{channels} * height * width; }
};

/// The datasets this layer reads.
enum class dataset_kind { fashion_mnist, mnist, cifar10, imagenet32, imagenet };

/// "fashion-mnist", "mnist", "cifar10", "imagenet32", "imagenet".
const char* name_of(dataset_kind kind);

/// The kind `name` names; std::invalid_argument listing the names otherwise.
dataset_kind parse_dataset_kind(const std::string& name);

/// Loads the train or test split of `kind` (fashion-mnist | mnist | cifar10 | imagenet32) from `dir`;
/// imagenet (file-backed: see open_dataset) is std::invalid_argument, a bad file a dataset_error.
dataset load_dataset(dataset_kind kind, const std::string& dir, bool train);

/// The same by name (an unknown name is std::invalid_argument).
dataset load_dataset(const std::string& kind, const std::string& dir, bool train);

/// Keeps only the first `n` images (n ≤ 0 or n ≥ count keeps all); used for quick runs.
void keep_first(dataset& d, int64_t n);

/// Per-channel mean μ_c = E[x/255] and population std σ_c = sqrt(E[(x/255 − μ_c)²]) over all images.
std::pair<std::vector<float>, std::vector<float>> channel_stats(const dataset& d);

}  // namespace petra::data
