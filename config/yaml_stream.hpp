// The head of a YAML stream: its first document, and whether a second one follows. yaml-cpp 0.7's
// LoadAll never returns on some malformed streams (a stray ']' or '}' yields document after
// document without consuming input, until memory runs out), so a config never loads them all.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace petra::config {

struct yaml_stream_head {
  YAML::Node first;         // null when the stream holds no document
  bool has_second = false;  // a second document that is not null (as LoadAll would keep it)
  YAML::Mark second_mark;   // where the second document's root starts
};

/// Parses at most two documents of `text`; a syntax error in either is YAML::ParserException.
yaml_stream_head read_stream_head(const std::string& text);

}  // namespace petra::config
