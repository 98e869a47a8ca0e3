// Reads the first document of a YAML stream and peeks at the second, never further.
#include "config/yaml_stream.hpp"

#include <yaml-cpp/eventhandler.h>

#include <sstream>

namespace petra::config {
namespace {

// Notes a document's root event: whether it is null (LoadAll stops at a null root) and where.
class root_probe : public YAML::EventHandler {
 public:
  bool null_root = true;
  YAML::Mark mark;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& at, YAML::anchor_t) override { root(at, false); }
  void OnAlias(const YAML::Mark& at, YAML::anchor_t) override { root(at, true); }
  void OnScalar(const YAML::Mark& at, const std::string&, YAML::anchor_t, const std::string&) override {
    root(at, true);
  }
  void OnSequenceStart(const YAML::Mark& at, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    root(at, true);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& at, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    root(at, true);
  }
  void OnMapEnd() override {}

 private:
  bool seen_ = false;
  void root(const YAML::Mark& at, bool non_null) {
    if (seen_) return;
    seen_ = true;
    null_root = !non_null;
    mark = at;
  }
};

}  // namespace

yaml_stream_head read_stream_head(const std::string& text) {
  yaml_stream_head head;
  head.first = YAML::Load(text);
  std::istringstream in(text);
  YAML::Parser parser(in);
  root_probe first, second;
  if (parser.HandleNextDocument(first) && !first.null_root && parser.HandleNextDocument(second) &&
      !second.null_root) {
    head.has_second = true;
    head.second_mark = second.mark;
  }
  return head;
}

}  // namespace petra::config
