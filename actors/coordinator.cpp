// The coordinator, a blocking actor driven from the calling thread: it is never on the hot
// path (stages talk to each other directly), only at phase boundaries.
#include "actors/coordinator.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <algorithm>

#include "actors/caf_config.hpp"
#include "actors/loader_actor.hpp"
#include "actors/loss_actor.hpp"
#include "actors/node_actor.hpp"
#include "actors/node_connection.hpp"
#include "actors/setup.hpp"
#include "actors/stage_actor.hpp"
#include "actors/stage_report_json.hpp"
#include "compute/serialize/safetensors.hpp"

namespace petra {

run_error::run_error(int32_t stage, int64_t tick, const std::string& what)
    : std::runtime_error(stage >= 0 ? "stage " + std::to_string(stage + 1) + (tick >= 0 ? " at tick " + std::to_string(tick) : "") + ": " + what
                                    : what),
      stage_(stage),
      tick_(tick) {}

namespace {

using namespace messages;
using namespace atoms;

constexpr auto control_timeout = std::chrono::seconds(60);

class actor_trainer : public trainer {
 public:
  actor_trainer(const config::run_config& c, const optimizer_settings& optimizer, std::shared_ptr<data_feed> feed)
      : config_(c), optimizer_(optimizer), caf_(c.runtime.threads, c.tls), system_(caf_), self_(system_), feed_(std::move(feed)) {
    mode_ = c.runtime.mode == "async" ? runtime_mode::async : runtime_mode::lockstep;
    // Backprop is the pipeline with one micro-batch in flight: no delay, no staleness.
    backprop_ = c.training.method == "backprop";
    const int32_t count = static_cast<int32_t>(stage_sizes(c).size());
    credits_ = backprop_ ? 1 : c.runtime.credits > 0 ? c.runtime.credits : 2 * count - 1;
    for (int32_t j = 0; j < count; ++j) placement_.push_back(node_of(c, static_cast<std::size_t>(j)));
    for (const std::string& spare : c.pipeline.spare_nodes) spares_.push_back(config::resolve_node_address(c, spare));
    loss_device_ = make_cpu_backend(1);
    build_pipeline();
  }

  bool is_current(const caf::actor_addr& who) const {
    if (who == loss_.address() || who == loader_.address()) return true;
    return std::any_of(stages_.begin(), stages_.end(), [&](const stage_actor& s) { return s.address() == who; });
  }

  void build_pipeline() {
    ++generation_;
    auto placed = build_placed_stages(config_, optimizer_, [&](std::size_t j) { return placement_[j] == "local"; });
    const int32_t count = static_cast<int32_t>(placed.size());
    stages_.clear();
    for (int32_t j = 0; j < count; ++j) {
      if (placement_[j] == "local")
        stages_.push_back(spawn_stage_actor(system_, stage_context{placed[j].device, placed[j].compute, j, mode_}));
      else
        stages_.push_back(spawn_remote_stage(placement_[j], j));
    }
    loss_ = spawn_loss_actor(system_, loss_device_, caf::actor_cast<caf::actor>(self_), 16);
    loader_ = spawn_loader_actor(system_, feed_, mode_);
    for (int32_t j = 0; j < count; ++j) {
      caf::actor prev = j > 0 ? caf::actor_cast<caf::actor>(stages_[j - 1]) : caf::actor{};
      caf::actor next = j + 1 < count ? caf::actor_cast<caf::actor>(stages_[j + 1]) : caf::actor{};
      ask<wire_atom>(stages_[j], wire_atom_v, prev, next, caf::actor_cast<caf::actor>(loss_),
                     caf::actor_cast<caf::actor>(loader_), caf::actor_cast<caf::actor>(self_), count);
      ask<faults_atom>(stages_[j], faults_atom_v, faults_of(j));
    }
    ask<wire_atom>(loader_, wire_atom_v, caf::actor_cast<caf::actor>(stages_.front()),
                   caf::actor_cast<caf::actor>(loss_), static_cast<int32_t>(credits_));
    for (auto& s : stages_) self_->monitor(s);
    self_->monitor(loss_);
    self_->monitor(loader_);
  }

  void tear_down() {
    auto stop = [&](const auto& who) {
      if (!who) return;
      self_->demonitor(who.address());
      self_->send_exit(who, caf::exit_reason::user_shutdown);
    };
    for (auto& s : stages_) stop(s);
    stop(loss_);
    stop(loader_);
    // Whatever the old pipeline still had in flight to us is dropped.
    bool more = true;
    while (more)
      self_->receive([](caf::message&) {}, caf::after(std::chrono::milliseconds(50)) >> [&] { more = false; });
  }

  void recover() override {
    tear_down();
    for (auto& where : placement_) {
      if (where == "local" || reachable(where)) continue;
      auto spare = std::find_if(spares_.begin(), spares_.end(), [&](const std::string& s) { return reachable(s); });
      if (spare == spares_.end())
        throw run_error(-1, -1, "node " + where + " is lost and no spare node (pipeline.spare_nodes) answers");
      const std::string lost = where;
      for (auto& w : placement_)
        if (w == lost) w = *spare;
      spares_.erase(spare);
    }
    build_pipeline();
  }

  ~actor_trainer() override {
    for (auto& s : stages_) self_->send_exit(s, caf::exit_reason::user_shutdown);
    if (loss_) self_->send_exit(loss_, caf::exit_reason::user_shutdown);
    if (loader_) self_->send_exit(loader_, caf::exit_reason::user_shutdown);
  }

  phase_totals train(int epoch, int64_t first, int64_t count, const progress_fn& progress, int attempt) override {
    if (!kills_sent_) send_node_kills();
    const int64_t J = static_cast<int64_t>(stages_.size());
    const int64_t extra = attempt == 0 ? lockstep_link_delays() : 0;  // a replay runs without faults
    const int64_t spacing = backprop_ ? 2 * J - 1 + extra : 1;
    phase_plan plan{epoch, count, (count - 1) * spacing + 2 * (J - 1) + extra + 1, first, spacing, attempt, generation_,
                    ++phase_};
    for (auto& s : stages_) ask<plan_atom>(s, plan_atom_v, plan);
    ask<plan_atom>(loader_, plan_atom_v, plan);

    std::size_t done = 0;
    const std::size_t needed = mode_ == runtime_mode::lockstep ? stages_.size() : 1;
    bool waiting = true;
    phase_totals live;
    while (waiting) {
      self_->receive(
          [&](done_atom, int32_t, int32_t generation) {
            if (generation == generation_ && ++done == needed) waiting = false;
          },
          [&](loss_report& so_far) {
            live.micro_batches = so_far.micro_batches, live.samples = so_far.samples;
            live.correct = so_far.correct, live.loss_sum = so_far.loss_sum;
            if (progress) progress(live);
          },
          [&](failure_report& f) {
            if (f.generation != generation_) return;  // from a pipeline already torn down
            if (f.what.find("injected crash") != std::string::npos) crash_fired_ = true;
            throw run_error(f.stage, f.tick, f.what);
          },
          [&](caf::down_msg& down) {
            if (is_current(down.source)) throw lost_actor(down);
          },
          caf::after(std::chrono::seconds(config_.faults.stall_seconds)) >> [&] {
            throw run_error(-1, -1, "no progress for " + std::to_string(config_.faults.stall_seconds) +
                                        " s (faults.stall_seconds): a message was lost or a stage hangs");
          });
    }
    phase_totals totals = collect_reports();
    totals.ticks = mode_ == runtime_mode::lockstep ? plan.ticks : 0;
    return totals;
  }

  eval_result evaluate(data_feed& test) override {
    test.start_epoch(0);
    eval_result r;
    double loss_sum = 0;
    int64_t correct = 0;
    micro_batch mb;
    while (test.next(mb)) {
      eval_data x{mb.id, mb.images};
      for (auto& s : stages_) x = ask<eval_data>(s, x);
      const loss_data out = ask<loss_data>(loss_, eval_atom_v, logits_data{stamp{mb.id}, x.x.x1},
                                           labels_data{mb.id, mb.labels});
      loss_sum += out.loss * static_cast<double>(out.samples);
      correct += out.correct;
      r.samples += out.samples;
    }
    if (r.samples) {
      r.loss = loss_sum / static_cast<double>(r.samples);
      r.accuracy = static_cast<double>(correct) / static_cast<double>(r.samples);
    }
    return r;
  }

  void save_checkpoint(const std::string& path, std::map<std::string, std::string> metadata) override {
    named_tensors tensors;
    nlohmann::json steps = nlohmann::json::array();
    for (auto& s : stages_) {
      stage_state state = ask<stage_state>(s, state_atom_v);
      for (auto& t : state.tensors) tensors.emplace_back(t.name, t.value);
      steps.push_back(state.optimizer_steps);
    }
    metadata["format"] = "petra-checkpoint-1";
    metadata["stage_steps"] = steps.dump();
    save_safetensors(path, tensors, metadata);
  }

  std::map<std::string, std::string> load_checkpoint(const std::string& path) override {
    const safetensors_file file = load_safetensors(path);
    auto meta = file.metadata;
    if (meta["format"] != "petra-checkpoint-1")
      throw std::runtime_error("'" + path + "' is not a petra checkpoint");
    const nlohmann::json steps = nlohmann::json::parse(meta.at("stage_steps"));
    if (!steps.is_array() || steps.size() != stages_.size())
      throw std::runtime_error("checkpoint '" + path + "' holds " + std::to_string(steps.size()) +
                               " stages but the pipeline has " + std::to_string(stages_.size()));
    for (std::size_t j = 0; j < stages_.size(); ++j) {
      stage_state state;
      state.stage = static_cast<int32_t>(j);
      state.optimizer_steps = steps[j].get<int64_t>();
      for (auto& t : file.tensors) state.tensors.push_back({t.first, t.second});
      ask<restore_atom>(stages_[j], restore_atom_v, state);
      first_stage_steps_ = j == 0 ? state.optimizer_steps : first_stage_steps_;
    }
    return meta;
  }

  double current_lr() override { return learning_rate(optimizer_, first_stage_steps_); }

 private:
  template <class Reply, class Handle, class... Ts>
  Reply ask(const Handle& who, Ts&&... xs) {
    Reply out{};
    bool failed = false;
    std::string why;
    self_->request(who, control_timeout, std::forward<Ts>(xs)...)
        .receive([&](Reply& r) { out = std::move(r); },
                 [&](caf::error& e) {
                   failed = true;
                   why = system_.render(e);
                 });
    if (failed) throw run_error(-1, -1, why);
    return out;
  }

  /// Asks the `petra node` at host:port to build stage j of this run.
  stage_actor spawn_remote_stage(const std::string& where, int32_t j) {
    node_actor node = connect(where, j);
    const int64_t steps_per_epoch = optimizer_.total_steps / std::max(1, config_.training.epochs);
    auto handle = ask<caf::actor>(node, spawn_atom_v, config::to_yaml(config_), j, steps_per_epoch);
    return caf::actor_cast<stage_actor>(handle);
  }

  /// The faults stage j injects: its outgoing links and, in lockstep, the delays of its incoming ones.
  stage_faults faults_of(int32_t j) const {
    const config::faults_config& f = config_.faults;
    auto at = [](const auto& list, int32_t i, auto fallback) {
      return i >= 0 && static_cast<std::size_t>(i) < list.size() ? list[static_cast<std::size_t>(i)] : fallback;
    };
    stage_faults out;
    out.forward_delay = at(f.forward_delay, j, 0);
    out.backward_delay = at(f.backward_delay, j - 1, 0);
    out.in_forward_delay = at(f.forward_delay, j - 1, 0);
    out.in_backward_delay = at(f.backward_delay, j, 0);
    out.jitter_ms = at(f.jitter_ms, j, 0);
    out.drop = at(f.drop, j, 0.0);
    out.duplicate = at(f.duplicate, j, 0.0);
    out.reorder = at(f.reorder, j, 0.0);
    out.slow = at(f.slow, j, 1.0);
    out.crash_at_tick = crash_fired_ ? -1 : at(f.crash_at_tick, j, -1);  // a crash happens once per run
    out.seed = f.seed;
    return out;
  }

  /// Lockstep: the extra ticks the link delays add to a micro-batch's round trip.
  int64_t lockstep_link_delays() const {
    if (mode_ != runtime_mode::lockstep) return 0;
    int64_t sum = 0;
    const std::size_t links = stages_.size() - 1;
    for (std::size_t j = 0; j < links && j < config_.faults.forward_delay.size(); ++j) sum += config_.faults.forward_delay[j];
    for (std::size_t j = 0; j < links && j < config_.faults.backward_delay.size(); ++j) sum += config_.faults.backward_delay[j];
    return sum;
  }

  /// faults.kill_node: each listed node is told to die that many seconds from now.
  void send_node_kills() {
    kills_sent_ = true;
    for (const std::string& entry : config_.faults.kill_node) {
      const auto at = entry.rfind('@');
      const std::string where = config::resolve_node_address(config_, entry.substr(0, at));
      const double seconds = std::stod(entry.substr(at + 1));
      self_->send(connect(where, -1), kill_atom_v, seconds);
    }
  }

  bool reachable(const std::string& where) {
    auto node = connect_node(system_, where, config_.tls);
    if (!node) {
      nodes_.erase(where);
      return false;
    }
    nodes_[where] = *node;
    return true;
  }

  node_actor connect(const std::string& where, int32_t j) {
    auto it = nodes_.find(where);
    if (it != nodes_.end()) return it->second;
    auto node = connect_node(system_, where, config_.tls);
    if (!node)
      throw run_error(j, -1, "cannot reach the node at " + where + " (is `petra node --listen " + where +
                                 "` running?): " + system_.render(node.error()));
    return nodes_.emplace(where, *node).first->second;
  }

  run_error lost_actor(const caf::down_msg& down) {
    for (std::size_t j = 0; j < stages_.size(); ++j)
      if (down.source == stages_[j].address())
        return run_error(static_cast<int32_t>(j), -1, "stage actor lost: " + system_.render(down.reason));
    return run_error(-1, -1, "actor lost: " + system_.render(down.reason));
  }

  phase_totals collect_reports() {
    phase_totals totals;
    for (auto& s : stages_) {
      const stage_report r = ask<stage_report>(s, report_atom_v);
      totals.stages.push_back(to_json(r, stages_.size()));
      if (r.stage == 0) first_stage_steps_ = r.weight_version;
    }
    const loss_report l = ask<loss_report>(loss_, report_atom_v);
    totals.micro_batches = l.micro_batches;
    totals.samples = l.samples;
    totals.correct = l.correct;
    totals.loss_sum = l.loss_sum;
    return totals;
  }

  config::run_config config_;
  optimizer_settings optimizer_;
  runtime_mode mode_;
  bool backprop_ = false;
  int64_t credits_ = 1;
  int64_t first_stage_steps_ = 0;
  caf_config caf_;
  caf::actor_system system_;
  caf::scoped_actor self_;
  std::vector<stage_actor> stages_;
  std::map<std::string, node_actor> nodes_;
  std::vector<std::string> placement_;  // per stage: local or host:port (after any move to a spare)
  std::vector<std::string> spares_;
  std::shared_ptr<data_feed> feed_;
  bool kills_sent_ = false;
  bool crash_fired_ = false;
  int32_t generation_ = 0;
  int64_t phase_ = 0;
  std::shared_ptr<backend> loss_device_;
  loss_actor loss_;
  loader_actor loader_;
};

}  // namespace

std::unique_ptr<trainer> make_actor_trainer(const config::run_config& c, training_data& data,
                                            const optimizer_settings& optimizer) {
  return std::make_unique<actor_trainer>(c, optimizer, data.train_feed);
}

}  // namespace petra
