// Building the actor pipeline.
#include "actors/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "actors/heartbeat.hpp"
#include "actors/loader_actor.hpp"
#include "actors/loss_actor.hpp"
#include "actors/node_connection.hpp"
#include "actors/stage_actor.hpp"
#include "compute/sim/sim_devices.hpp"
#include "config/decimal.hpp"
#include "training/setup.hpp"
#include "training/tick_schedule.hpp"

namespace petra {

using namespace messages;
using namespace atoms;

namespace {

template <class List, class Value>
Value entry(const List& list, int32_t i, Value fallback) {
  return i >= 0 && static_cast<std::size_t>(i) < list.size()
             ? static_cast<Value>(list[static_cast<std::size_t>(i)])
             : fallback;
}

}  // namespace

actor_pipeline::actor_pipeline(const config::run_config& c, const optimizer_settings& optimizer,
                               std::shared_ptr<data_feed> feed, std::shared_ptr<data_feed> waves,
                               control_channel& control, std::shared_ptr<training::trace_recorder> trace)
    : config_(c),
      optimizer_(optimizer),
      feed_(std::move(feed)),
      waves_(std::move(waves)),
      control_(control),
      loss_device_(make_loss_backend()),
      trace_(std::move(trace)) {
  const std::size_t count = stage_sizes(c).size();
  for (std::size_t j = 0; j < count; ++j) placement_.push_back(node_of(c, j));
  for (const std::string& spare : c.pipeline.spare_nodes)
    spares_.push_back(config::resolve_node_address(c, spare));
  const double timeout = c.runtime.heartbeat_timeout;
  heartbeats_ = spawn_heartbeat_monitor(control_.self()->system(), std::chrono::duration<double>(timeout),
                                        control_.verdicts(timeout));
}

actor_pipeline::~actor_pipeline() {
  // Every local actor must be gone before the actor system is: see control_channel::await_gone.
  std::vector<caf::actor_addr> local;
  for (std::size_t j = 0; j < stages_.size(); ++j)
    if (placement_[j] == "local") local.push_back(stages_[j].address());
  // The stages on nodes end before the run does: a node that saw this process go first would say
  // that it stopped a run's stages (and, meanwhile, hold their memory from the next run).
  caf::scoped_actor remote_ends{control_.self()->system()};
  std::size_t remote = 0;
  for (std::size_t j = 0; j < stages_.size(); ++j)
    if (stages_[j] && placement_[j] != "local" && !control_.declared_lost(placement_[j]))
      remote_ends->monitor(stages_[j]), ++remote;
  for (auto& s : stages_) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  // A node that is gone answers at once (its stages' proxies are down); a silent one is not awaited long.
  const auto remote_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (remote > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(remote_deadline -
                                                                            std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    remote_ends->receive([&](const caf::down_msg&) { --remote; }, caf::after(left) >> [&] { remote = 0; });
  }
  if (loss_) local.push_back(loss_.address()), caf::anon_send_exit(loss_, caf::exit_reason::user_shutdown);
  if (loader_)
    local.push_back(loader_.address()), caf::anon_send_exit(loader_, caf::exit_reason::user_shutdown);
  // The monitor calls into control_: its behavior must be over before control_ goes. Its end is
  // awaited, not its last reference: the next round it booked (a delayed message, up to a round
  // after its exit: 1 s by default) and a heartbeat request to a node (an hour) keep it referenced,
  // and waiting for those held every run's end by up to a second.
  if (heartbeats_) {
    caf::scoped_actor waiter{control_.self()->system()};
    waiter->monitor(heartbeats_);
    waiter->send_exit(heartbeats_, caf::exit_reason::user_shutdown);
    heartbeats_ = nullptr;
    bool ended = false;
    waiter->receive([&](const caf::down_msg&) { ended = true; },
                    caf::after(std::chrono::seconds(10)) >> [] {});
    if (!ended) std::cerr << "petra: the heartbeat monitor did not end within 10 s of the pipeline's stop\n";
  }
  stages_.clear();
  loss_ = nullptr;
  loader_ = nullptr;
  const auto left = control_.await_gone(std::move(local), std::chrono::seconds(10));
  if (!left.empty())
    std::cerr << "petra: " << left.size() << " actor(s) still referenced 10 s after the pipeline stopped\n";
}

void actor_pipeline::build() {
  ++generation_;
  caf::actor_system& sys = control_.self()->system();
  sim_ = std::make_shared<sim_devices>();
  auto placed = build_placed_stages(
      config_, optimizer_, [&](std::size_t j) { return placement_[j] == "local"; }, sim_);
  const auto count = static_cast<int32_t>(placed.size());
  stage_generation_.assign(placed.size(), ++newest_generation_);
  stages_.clear();
  for (int32_t j = 0; j < count; ++j) {
    if (placement_[j] == "local")
      stages_.push_back(
          spawn_stage_actor(sys, make_stage_context(config_, placed[j], j, count, trace_, "coordinator")));
    else
      stages_.push_back(spawn_remote_stage(placement_[j], j));
  }
  // With per-step metrics the loss actor reports every optimizer step's micro-batches.
  const int64_t progress_every = config_.output.metrics_every_steps > 0 ? config_.training.accumulation : 16;
  loss_ = spawn_loss_actor(sys, loss_device_, progress_every, trace_, count);
  const method_options method = method_for(config_.training);
  const bool labels_to_stages =  // the auxiliary heads' local losses
      method.kind == method_kind::forward_gradient && method.forward_gradient.needs_aux_head();
  loader_ = spawn_loader_actor(sys, feed_, waves_, config_.runtime.mode, labels_to_stages, trace_);
  const auto credits = static_cast<int32_t>(loader_credits(config_, static_cast<std::size_t>(count)));

  std::vector<caf::actor_addr> watched;
  std::vector<int32_t> stage_of;
  for (int32_t j = 0; j < count; ++j) watched.push_back(stages_[j].address()), stage_of.push_back(j);
  watched.push_back(loss_.address()), stage_of.push_back(-1);
  watched.push_back(loader_.address()), stage_of.push_back(-1);
  control_.watch(watched, stage_of, generation_);
  place_nodes();
  for (auto& s : stages_) control_.monitor(s);
  control_.monitor(loss_);
  control_.monitor(loader_);

  for (int32_t j = 0; j < count; ++j) {
    rewire(j);
    control_.ask<faults_atom>(stages_[j], control_timeout, faults_atom_v, faults_of(j));
  }
  rewire_loss();
  loader_credits_ = credits;
  rewire_loader();
}

void actor_pipeline::rewire_loader() {
  control_.ask<wire_atom>(loader_, control_timeout,
                          loader_links{forward_sink{stages_.front()}, loss_, loader_credits_});
}

void actor_pipeline::rewire(int32_t j) {
  const auto count = static_cast<int32_t>(stages_.size());
  // A neighbour in the same process gets tensors on its own device; any other through the host.
  auto device_for = [&](int32_t from, int32_t to) {
    return placement_[from] == placement_[to] ? device_of(config_, static_cast<std::size_t>(to)) : device{};
  };
  stage_links links;
  if (j > 0) links.prev = stages_[j - 1], links.prev_device = device_for(j, j - 1);
  if (j + 1 < count) links.next = stages_[j + 1], links.next_device = device_for(j, j + 1);
  links.loss = loss_;
  links.loader = loader_;
  links.coordinator = control_.handle();
  links.count = count;
  links.generation = stage_generation_[j];
  if (j > 0) links.prev_generation = stage_generation_[j - 1];
  if (j + 1 < count) links.next_generation = stage_generation_[j + 1];
  control_.ask<wire_atom>(stages_[j], control_timeout, links);
}

void actor_pipeline::rewire_loss() {
  // In async the loss actor returns an evaluation batch's credit; in lockstep credits count ticks.
  const credit_sink eval_credits =
      config_.runtime.mode == config::runtime_mode::async ? credit_sink{loader_} : credit_sink{};
  loss_links links{loss_sink{stages_.back()},
                   control_.handle(),
                   eval_credits,
                   feed_->micro_batches_per_epoch(),
                   waves_->micro_batches_per_epoch(),
                   stage_generation_.back()};
  if (config_.training.method == config::training_method::forward_gradient)
    for (const stage_actor& s : stages_) links.stages.push_back(derivatives_sink{s});
  control_.ask<wire_atom>(loss_, control_timeout, std::move(links));
}

std::vector<int32_t> actor_pipeline::lost_with(int32_t j) {
  fence_lost_nodes();
  const std::string where = placement_[static_cast<std::size_t>(j)];
  if (where == "local" || reachable(where)) return {j};
  std::vector<int32_t> out;
  for (std::size_t i = 0; i < placement_.size(); ++i)
    if (placement_[i] == where) out.push_back(static_cast<int32_t>(i));
  return out;
}

void actor_pipeline::respawn(int32_t j) {
  const std::size_t i = static_cast<std::size_t>(j);
  control_.unwatch(stages_[i].address());  // its down, when it comes, is stale
  stage_generation_[i] = ++newest_generation_;
  if (placement_[i] != "local" && !reachable(placement_[i])) move_to_spare(placement_[i]);
  if (placement_[i] == "local") {
    auto placed = build_placed_stages(
        config_, optimizer_, [&](std::size_t k) { return k == i; }, sim_);
    const auto count = static_cast<int32_t>(stages_.size());
    stages_[i] = spawn_stage_actor(control_.self()->system(),
                                   make_stage_context(config_, placed[i], j, count, trace_, "coordinator"));
  } else {
    stages_[i] = spawn_remote_stage(placement_[i], j);
  }
  control_.watch_extra(stages_[i].address(), j);
  control_.monitor(stages_[i]);
  place_nodes();
  control_.ask<faults_atom>(stages_[i], control_timeout, faults_atom_v, faults_of(j));
}

void actor_pipeline::move_to_spare(std::string lost) {
  auto spare =
      std::find_if(spares_.begin(), spares_.end(), [&](const std::string& s) { return reachable(s); });
  if (spare == spares_.end())
    throw run_failure(failure_kind::unreachable, -1, -1,
                      "node " + lost + " is lost and no spare node (pipeline.spare_nodes) answers");
  for (auto& w : placement_)
    if (w == lost) w = *spare;
  spares_.erase(spare);
}

void actor_pipeline::tear_down() {
  auto stop = [&](const auto& who) {
    if (!who) return;
    control_.self()->send_exit(who, caf::exit_reason::user_shutdown);
  };
  for (auto& s : stages_) stop(s);
  stop(loss_);
  stop(loader_);
  control_.watch({}, {}, generation_);
  control_.drain();
}

void actor_pipeline::fence_lost_nodes() {
  for (std::size_t j = 0; j < placement_.size(); ++j)
    if (placement_[j] != "local" && control_.declared_lost(placement_[j]) && j < stages_.size())
      control_.fence(stages_[j].address());
}

void actor_pipeline::place_nodes() {
  std::map<std::string, int32_t> first;
  for (std::size_t j = 0; j < placement_.size(); ++j)
    if (placement_[j] != "local") first.emplace(placement_[j], static_cast<int32_t>(j));
  control_.place_nodes(std::move(first));
}

void actor_pipeline::recover() {
  fence_lost_nodes();
  tear_down();
  for (std::size_t j = 0; j < placement_.size(); ++j)
    if (placement_[j] != "local" && !reachable(placement_[j])) move_to_spare(placement_[j]);
  build();
}

void actor_pipeline::repartition(const std::vector<int>& stage_blocks) {
  tear_down();
  config_.pipeline.stage_blocks = stage_blocks;
  build();
}

std::vector<std::string> actor_pipeline::remote_nodes() const {
  std::vector<std::string> out;
  for (const std::string& where : placement_)
    if (where != "local" && std::find(out.begin(), out.end(), where) == out.end()) out.push_back(where);
  return out;
}

void actor_pipeline::send_node_kills() {
  if (kills_sent_) return;
  kills_sent_ = true;
  for (const std::string& entry_text : config_.faults.kill_node) {
    const auto at = entry_text.rfind('@');
    const std::string where = config::resolve_node_address(config_, entry_text.substr(0, at));
    const double seconds = config::decimal_seconds(entry_text.substr(at + 1));  // validated: >= 0
    control_.self()->send(connect(where, -1), kill_node{seconds});
    const auto first = std::find(placement_.begin(), placement_.end(), where);
    control_.count_kill(first == placement_.end() ? 0 : static_cast<int32_t>(first - placement_.begin()));
  }
}

stage_actor actor_pipeline::spawn_remote_stage(const std::string& where, int32_t j) {
  node_actor node = connect(where, j);
  control_.watch_extra(node.address(), j);
  control_.monitor(node);
  const int64_t steps_per_epoch = optimizer_.total_steps / std::max(1, config_.training.epochs);
  return control_.ask<stage_actor>(node, control_timeout,
                                   spawn_stage{config::to_yaml(config_), j, steps_per_epoch});
}

node_actor actor_pipeline::connect(const std::string& where, int32_t j) {
  auto it = nodes_.find(where);
  if (it != nodes_.end()) return it->second;
  if (control_.declared_lost(where))
    throw run_failure(failure_kind::unreachable, j, -1,
                      "the node at " + where + " was declared lost (silent for runtime.heartbeat_timeout)");
  auto node = connect_node(control_.self()->system(), where, config_.tls);
  if (!node) {
    const std::string why = control_.self()->system().render(node.error());
    // A TLS peer that hangs up during the handshake is up but refused our certificate or we its.
    const std::string hint =
        config_.tls.enabled() && why.find("handshake") != std::string::npos
            ? "the TLS handshake failed: is the node's certificate signed by the run's CA (" +
                  config_.tls.ca + "), and the run's by the node's --tls-ca?"
            : "is `petra node --listen " + where + "` running?";
    throw run_failure(failure_kind::unreachable, j, -1,
                      "cannot reach the node at " + where + " (" + hint + "): " + why);
  }
  caf::anon_send(heartbeats_, atoms::watch_atom_v, where, caf::actor_cast<caf::actor>(*node));
  return nodes_.emplace(where, *node).first->second;
}

bool actor_pipeline::reachable(const std::string& where) {
  // A hung node's connection is still open (and cached): only the heartbeats know it is lost.
  const bool lost = control_.declared_lost(where);
  auto node = lost ? caf::expected<node_actor>{caf::sec::cannot_connect_to_node}
                   : connect_node(control_.self()->system(), where, config_.tls);
  if (!node) {
    if (auto known = nodes_.find(where); known != nodes_.end()) control_.unwatch(known->second.address());
    nodes_.erase(where);
    return false;
  }
  nodes_[where] = *node;
  caf::anon_send(heartbeats_, atoms::watch_atom_v, where, caf::actor_cast<caf::actor>(*node));
  return true;
}

stage_faults actor_pipeline::faults_of(int32_t j) const {
  const config::faults_config& f = config_.faults;
  stage_faults out;
  out.forward_delay = entry(f.forward_delay, j, int64_t{0});
  out.backward_delay = entry(f.backward_delay, j - 1, int64_t{0});
  out.in_forward_delay = entry(f.forward_delay, j - 1, int64_t{0});
  out.in_backward_delay = entry(f.backward_delay, j, int64_t{0});
  out.jitter_ms = entry(f.jitter_ms, j, int64_t{0});
  out.drop = entry(f.drop, j, 0.0);
  out.duplicate = entry(f.duplicate, j, 0.0);
  out.reorder = entry(f.reorder, j, 0.0);
  out.slow = entry(f.slow, j, 1.0);
  out.crash_at_tick =
      all_crashes_fired_ || crashes_fired_.count(j) > 0 ? -1 : entry(f.crash_at_tick, j, int64_t{-1});
  out.drop_burst = bursts_fired_.count(j) > 0 ? 0 : entry(f.drop_burst, j, int64_t{0});
  out.drop_burst_at_tick = out.drop_burst > 0 ? entry(f.drop_burst_at_tick, j, int64_t{-1}) : -1;
  out.seed = f.seed;
  return out;
}

}  // namespace petra
