// petra's own CAF error category: how an actor's failure is classified, by code, never by the
// text of a message.
#pragma once

#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <cstdint>
#include <string>

namespace petra::messages {

enum class petra_errc : uint8_t {
  none = 0,
  injected_crash,   // faults.crash_at_tick fired
  stage_exception,  // a stage threw while computing
  lost_actor,       // an actor the coordinator monitors ended
  stall,            // no progress for faults.stall_seconds
  unreachable,      // a node could not be reached
  bad_request,      // a control request was refused or its handler failed
  bad_data,         // the data loader met a file it must not skip (data.on_bad_image: fail)
};

/// "injected_crash", "stage_exception", ...
std::string to_string(petra_errc code);

/// True when `err` is petra's error `code`.
inline bool has_code(const caf::error& err, petra_errc code) {
  return err.category() == caf::atom("petra") && err.code() == static_cast<uint8_t>(code);
}

}  // namespace petra::messages

CAF_ERROR_CODE_ENUM(petra::messages::petra_errc, "petra")
