// Live migration, the trainer's side: placements, the request file, the moves at drained points.
#include "training/migration.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "compute/serialize/atomic_file.hpp"
#include "training/setup.hpp"
#include "training/stage_threads.hpp"

namespace petra {

namespace fs = std::filesystem;

config::migration_target placement_of(const config::run_config& c, std::size_t j) {
  const config::pipeline_config& p = c.pipeline;
  config::migration_target out;
  if (j < p.devices.size()) out.device = p.devices[j];
  if (j < p.threads.size()) out.threads = p.threads[j];
  if (j < p.nodes.size()) out.node = p.nodes[j];
  return out;
}

config::run_config placed_at(config::run_config c, std::size_t j, const config::migration_target& to) {
  const std::size_t count = stage_sizes(c).size();
  config::pipeline_config& p = c.pipeline;
  if (to.threads > 0) {  // the list made whole: every other stage keeps the threads it has
    const int cores = usable_cores();
    std::vector<int> threads(count);
    for (std::size_t k = 0; k < count; ++k) threads[k] = stage_threads(c, k, cores);
    threads[j] = to.threads;
    p.threads = threads;
  }
  p.devices.resize(count);  // added entries: cpu
  p.devices[j] = to.device;
  p.nodes.resize(count, "local");
  p.nodes[j] = to.node;
  return c;
}

namespace {

std::string hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

/// Stage `stage` (1-based) and the node of `to` against the run; `entry` names what asked.
void check_against_run(const config::run_config& c, const std::string& entry, int stage,
                       const config::migration_target& to) {
  const std::size_t count = stage_sizes(c).size();
  if (stage < 1 || static_cast<std::size_t>(stage) > count)
    throw config::config_error(entry + ": stage " + std::to_string(stage) +
                               " is not in the pipeline, which has " + std::to_string(count) +
                               " stages (1 to " + std::to_string(count) + ")");
  try {
    config::resolve_node_address(c, to.node);
  } catch (const config::config_error& e) {
    throw config::config_error(entry + ": " + e.what());
  }
}

}  // namespace

std::string why_not_migrated_at(const config::run_config& c, int64_t position) {
  const int k = c.training.accumulation;
  if (c.training.method != config::training_method::forward_gradient || k <= 1 || position % k == 0)
    return "";
  return "with training.method forward_gradient a stage moves only where its auxiliary head has just "
         "stepped (it does not carry the gradients the head accumulates between steps): micro-batch " +
         std::to_string(position) + " of the run is not a multiple of training.accumulation (" +
         std::to_string(k) + ")";
}

uint64_t state_checksum(const std::vector<named_tensor>& tensors, const std::string& meta) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  };
  for (const named_tensor& t : tensors) {
    mix(t.name.data(), t.name.size() + 1);  // with its terminator: names cannot run into each other
    for (const int64_t d : t.value.shape()) mix(&d, sizeof d);
    if (t.value.numel() > 0) mix(t.value.data(), t.value.bytes());
  }
  mix(meta.data(), meta.size());
  return h;
}

void check_scheduled_migrations(const config::run_config& c, int64_t end) {
  const auto& entries = c.pipeline.migrate;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string entry = "pipeline.migrate: entry " + std::to_string(i) + " (" + entries[i].str() + ")";
    check_against_run(c, entry, entries[i].stage, entries[i].to);
    if (const std::string why = why_not_migrated_at(c, entries[i].position); !why.empty())
      throw config::config_error(entry + ": " + why);
    if (entries[i].position >= end)
      throw config::config_error(entry + " is at micro-batch " + std::to_string(entries[i].position) +
                                 ", not inside the run (" + std::to_string(end) +
                                 " micro-batches): a stage moves between two of its phases");
  }
}

config::migration_target check_requested_migration(const config::run_config& c, int stage,
                                                   const std::string& to) {
  const config::migration_target target = config::parse_migration_target(to);
  check_against_run(c, "the migration of stage " + std::to_string(stage) + " to " + to, stage, target);
  return target;
}

std::string migration_request_path(const std::string& run) {
  return (fs::path(run) / "migrate.request").string();
}
std::string trainer_pid_path(const std::string& run) { return (fs::path(run) / "train.pid").string(); }

bool post_migration_request(const std::string& run, const migration_request& r) {
  const std::string path = migration_request_path(run);
  if (fs::exists(path)) return false;
  const nlohmann::json body = {{"id", r.id}, {"stage", r.stage}, {"to", r.to}};
  write_file_atomically(path, [&](std::ostream& out) { out << body.dump() << "\n"; });
  return true;
}

std::optional<migration_request> take_migration_request(const std::string& run) {
  const std::string path = migration_request_path(run);
  const std::string taken = path + ".taken";
  if (std::rename(path.c_str(), taken.c_str()) != 0) return std::nullopt;  // none pending
  migration_request out;
  try {
    std::ifstream in(taken);
    const nlohmann::json body = nlohmann::json::parse(in);
    out.id = body.at("id").get<std::string>();
    out.stage = body.at("stage").get<int>();
    out.to = body.at("to").get<std::string>();
  } catch (const std::exception& e) {
    out.id.clear();
    out.to = std::string("the request file could not be read: ") + e.what();
  }
  std::error_code ignored;
  fs::remove(taken, ignored);
  return out;
}

long running_trainer(const std::string& run) {
  std::ifstream in(trainer_pid_path(run));
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return 0;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM ? pid : 0;
}

migration_desk::migration_desk(prepared_run& p, run_dir& dir) : p_(p), dir_(dir) {
  write_file_atomically(trainer_pid_path(dir_.path()), [](std::ostream& out) { out << ::getpid() << "\n"; });
}

migration_desk::~migration_desk() {
  std::error_code ignored;
  fs::remove(trainer_pid_path(dir_.path()), ignored);
}

void migration_desk::at_point(int64_t position, int64_t ticks) {
  const std::vector<config::stage_migration> scheduled =
      p_.cfg.pipeline.migrate;  // each move rewrites p_.cfg
  for (const config::stage_migration& m : scheduled)
    if (m.position == position)
      migrate(static_cast<std::size_t>(m.stage - 1), m.to, position, ticks, "scheduled");
  const std::optional<migration_request> r = take_migration_request(dir_.path());
  if (!r) return;
  if (r->id.empty()) return refuse(migration_request{}, r->to);
  try {
    const config::migration_target to = check_requested_migration(p_.cfg, r->stage, r->to);
    if (const std::string why = why_not_migrated_at(p_.cfg, position); !why.empty())
      return refuse(*r, why + "; asked again, it may move at a later drained point");
    migrate(static_cast<std::size_t>(r->stage - 1), to, position, ticks, r->id);
  } catch (const config::config_error& e) {
    refuse(*r, e.what());
  } catch (const migration_refused& e) {
    refuse(*r, e.what());
  }
}

void migration_desk::at_end() {
  if (const std::optional<migration_request> r = take_migration_request(dir_.path()))
    refuse(*r, "the run ended before another drained point (migrations happen between phases)");
}

void migration_desk::migrate(std::size_t j, const config::migration_target& to, int64_t position,
                             int64_t ticks, const std::string& why) {
  const migration_done done = p_.runtime->migrate(j, to);
  p_.cfg = placed_at(p_.cfg, j, to);  // later checkpoints and migrations see the stage where it is
  nlohmann::json line = {{"event", "migrate"},
                         {"position", position},
                         {"tick", ticks},
                         {"stage", j + 1},
                         {"from", done.from},
                         {"to", done.to},
                         {"bytes", done.bytes},
                         {"seconds", done.seconds},
                         {"checksum", hex(done.checksum)},
                         {"restored_checksum", hex(done.restored_checksum)}};
  if (why == "scheduled")
    line["scheduled"] = true;
  else
    line["request"] = why;
  dir_.log(line);
  std::printf("migrate before micro-batch %lld: stage %zu from %s to %s, %lld bytes in %.3f s%s\n",
              static_cast<long long>(position), j + 1, done.from.c_str(), done.to.c_str(),
              static_cast<long long>(done.bytes), done.seconds,
              why == "scheduled" ? " as pipeline.migrate says" : " as `petra migrate` asked");
  std::fflush(stdout);
}

void migration_desk::refuse(const migration_request& r, const std::string& reason) {
  dir_.log({{"event", "migrate_refused"},
            {"request", r.id},
            {"stage", r.stage},
            {"to", r.to},
            {"reason", reason}});
  std::printf("migrate: the request to move stage %d to %s is refused: %s\n", r.stage, r.to.c_str(),
              reason.c_str());
  std::fflush(stdout);
}

}  // namespace petra
