// The coordinator, a blocking actor driven from the calling thread: it is never on the hot
// path (stages talk to each other directly), only at phase boundaries.
#include "actors/coordinator.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/caf_config.hpp"
#include "actors/loader_actor.hpp"
#include "actors/loss_actor.hpp"
#include "actors/node_actor.hpp"
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
constexpr auto silence_limit = std::chrono::minutes(10);  // a phase with no message this long has hung

class actor_trainer : public trainer {
 public:
  actor_trainer(const config::run_config& c, const optimizer_settings& optimizer)
      : config_(c), optimizer_(optimizer), caf_(c.runtime.threads), system_(caf_), self_(system_) {
    mode_ = c.runtime.mode == "async" ? runtime_mode::async : runtime_mode::lockstep;
    auto placed = build_placed_stages(c, optimizer, [&](std::size_t j) { return node_of(c, j) == "local"; });
    const int32_t count = static_cast<int32_t>(placed.size());
    // Backprop is the pipeline with one micro-batch in flight: no delay, no staleness.
    backprop_ = c.training.method == "backprop";
    credits_ = backprop_ ? 1 : c.runtime.credits > 0 ? c.runtime.credits : 2 * count - 1;
    for (std::size_t j = 0; j < placed.size(); ++j) {
      const std::string where = node_of(c, j);
      if (where == "local")
        stages_.push_back(spawn_stage_actor(system_, stage_context{placed[j].device, placed[j].compute,
                                                                   static_cast<int32_t>(j), mode_}));
      else
        stages_.push_back(spawn_remote_stage(where, static_cast<int32_t>(j)));
    }
    loss_device_ = make_cpu_backend(1);
    loss_ = spawn_loss_actor(system_, loss_device_, caf::actor_cast<caf::actor>(self_), 16);
  }

  void attach_data(std::shared_ptr<data_feed> train_feed) {
    loader_ = spawn_loader_actor(system_, std::move(train_feed), mode_);
    const int32_t count = static_cast<int32_t>(stages_.size());
    for (int32_t j = 0; j < count; ++j) {
      caf::actor prev = j > 0 ? caf::actor_cast<caf::actor>(stages_[j - 1]) : caf::actor{};
      caf::actor next = j + 1 < count ? caf::actor_cast<caf::actor>(stages_[j + 1]) : caf::actor{};
      ask<wire_atom>(stages_[j], wire_atom_v, prev, next, caf::actor_cast<caf::actor>(loss_),
                     caf::actor_cast<caf::actor>(loader_), caf::actor_cast<caf::actor>(self_), count);
    }
    ask<wire_atom>(loader_, wire_atom_v, caf::actor_cast<caf::actor>(stages_.front()),
                   caf::actor_cast<caf::actor>(loss_), static_cast<int32_t>(credits_));
    for (auto& s : stages_) self_->monitor(s);
    self_->monitor(loss_);
    self_->monitor(loader_);
  }

  ~actor_trainer() override {
    for (auto& s : stages_) self_->send_exit(s, caf::exit_reason::user_shutdown);
    if (loss_) self_->send_exit(loss_, caf::exit_reason::user_shutdown);
    if (loader_) self_->send_exit(loader_, caf::exit_reason::user_shutdown);
  }

  phase_totals train(int epoch, int64_t first, int64_t count, const progress_fn& progress) override {
    const int64_t J = static_cast<int64_t>(stages_.size());
    const int64_t spacing = backprop_ ? 2 * J - 1 : 1;
    phase_plan plan{epoch, count, (count - 1) * spacing + 2 * (J - 1) + 1, first, spacing};
    for (auto& s : stages_) ask<plan_atom>(s, plan_atom_v, plan);
    ask<plan_atom>(loader_, plan_atom_v, plan);

    std::size_t done = 0;
    const std::size_t needed = mode_ == runtime_mode::lockstep ? stages_.size() : 1;
    bool waiting = true;
    phase_totals live;
    while (waiting) {
      self_->receive(
          [&](done_atom, int32_t) {
            if (++done == needed) waiting = false;
          },
          [&](loss_report& so_far) {
            live.micro_batches = so_far.micro_batches, live.samples = so_far.samples;
            live.correct = so_far.correct, live.loss_sum = so_far.loss_sum;
            if (progress) progress(live);
          },
          [&](failure_report& f) { throw run_error(f.stage, f.tick, f.what); },
          [&](caf::down_msg& down) { throw lost_actor(down); },
          caf::after(silence_limit) >> [&] {
            throw run_error(-1, -1, "no stage reported for " + std::to_string(silence_limit.count()) +
                                        " minutes: the pipeline is stuck");
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
    auto it = nodes_.find(where);
    if (it == nodes_.end()) {
      const auto [host, port] = parse_host_port(where);
      auto node = system_.middleman().remote_actor<node_actor>(host, port);
      if (!node)
        throw run_error(j, -1, "cannot reach the node at " + where + " (is `petra node --listen " + where +
                                   "` running?): " + system_.render(node.error()));
      it = nodes_.emplace(where, *node).first;
    }
    const int64_t steps_per_epoch = optimizer_.total_steps / std::max(1, config_.training.epochs);
    auto handle = ask<caf::actor>(it->second, spawn_atom_v, config::to_yaml(config_), j, steps_per_epoch);
    return caf::actor_cast<stage_actor>(handle);
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
  std::shared_ptr<backend> loss_device_;
  loss_actor loss_;
  loader_actor loader_;
};

}  // namespace

std::unique_ptr<trainer> make_actor_trainer(const config::run_config& c, training_data& data,
                                            const optimizer_settings& optimizer) {
  auto t = std::make_unique<actor_trainer>(c, optimizer);
  t->attach_data(data.train_feed);
  return t;
}

}  // namespace petra
