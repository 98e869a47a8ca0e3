// Names of petra's error codes (caf_config registers the category with them).
#include "messages/errors.hpp"

namespace petra::messages {

std::string to_string(petra_errc code) {
  switch (code) {
    case petra_errc::none:
      return "none";
    case petra_errc::injected_crash:
      return "injected_crash";
    case petra_errc::stage_exception:
      return "stage_exception";
    case petra_errc::lost_actor:
      return "lost_actor";
    case petra_errc::stall:
      return "stall";
    case petra_errc::unreachable:
      return "unreachable";
    case petra_errc::bad_request:
      return "bad_request";
    case petra_errc::bad_data:
      return "bad_data";
  }
  return "unknown";
}

}  // namespace petra::messages
