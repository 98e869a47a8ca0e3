// One build of the actor pipeline: stage actors (in this process or on `petra node`s), the loss
// actor and the loader, wired to each other and to the coordinator, and monitored by it. After a
// failure it is torn down and built again, stages of a lost node moving to a spare node.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/control.hpp"
#include "compute/optimizer.hpp"
#include "config/config.hpp"
#include "training/data_feed.hpp"
#include "training/trace_recorder.hpp"

namespace petra {

class actor_pipeline {
 public:
  /// `trace` (may be null): this process's timeline, given to every local actor.
  actor_pipeline(const config::run_config& c, const optimizer_settings& optimizer,
                 std::shared_ptr<data_feed> feed, std::shared_ptr<data_feed> waves, control_channel& control,
                 std::shared_ptr<training::trace_recorder> trace);
  ~actor_pipeline();

  /// Spawns, wires and monitors a new generation of the pipeline's actors.
  void build();
  /// Stops every actor of the current generation and drops what they still send.
  void tear_down();
  /// After a failure: tears down, moves the stages of unreachable nodes to spare nodes, builds again.
  void recover();
  /// Drained: stops every actor and builds them again with the model cut into `stage_blocks`
  /// (pipeline.rebalance), each stage where it is placed now: its device after any migration, its
  /// node (a `petra node` builds its stages of the new cut from the config it is sent).
  void repartition(const std::vector<int>& stage_blocks);
  /// Drained: stage j moves to `to` (pipeline.migrate, `petra migrate`; actors/migration.cpp).
  /// Throws migration_refused, with nothing changed, when the target cannot be had.
  void migrate(int32_t j, const config::migration_target& to);
  /// Stage-local recovery: the stages lost with stage j (every stage of its node when the node is gone).
  std::vector<int32_t> lost_with(int32_t j);
  /// Builds stage j again in place of a lost one (on a spare node when its node is gone), with its
  /// faults, monitored, not yet wired: once every lost stage is built again, rewire it and its
  /// neighbours (which still point at the lost ones). Here, a stage on a simulated device gets a
  /// backend of the same simulated devices as the stages it shares the device with (their streams
  /// and events hand over to it as before); a GPU stage a new stream and handles on its GPU.
  void respawn(int32_t j);
  /// Sends stage j its links again; the loss actor its last stage.
  void rewire(int32_t j);
  void rewire_loss();
  /// Sends the loader its links again (a rebuilt stage 1).
  void rewire_loader();
  /// faults.kill_node: each listed node is told to kill itself that many seconds from now; each
  /// kill counts as a fault of the first stage it holds. Once per run.
  void send_node_kills();

  const std::vector<messages::stage_actor>& stages() const { return stages_; }
  const messages::loss_actor& loss() const { return loss_; }
  const messages::loader_actor& loader() const { return loader_; }
  /// The nodes that host stages now (host:port), each once.
  std::vector<std::string> remote_nodes() const;
  /// A connected node.
  messages::node_actor node(const std::string& where) { return connect(where, -1); }
  int32_t generation() const { return generation_; }
  /// Stage j's crash of faults.crash_at_tick happens once per run: the next builds leave it out (the
  /// other stages' crashes stay armed, whether the pipeline is rebuilt whole or only stage j is).
  /// A stage not known (< 0): every stage's crash is left out.
  void crash_fired(int32_t j) {
    if (j < 0) all_crashes_fired_ = true;
    crashes_fired_.insert(j);
  }
  /// So is stage j's drop burst (faults.drop_burst): once it lost messages, the next builds leave it out.
  void burst_fired(int32_t j) { bursts_fired_.insert(j); }

 private:
  messages::stage_actor spawn_remote_stage(const std::string& where, int32_t j);
  messages::node_actor connect(const std::string& where, int32_t j);
  bool reachable(const std::string& where);
  /// Moves every stage of the lost node `lost` to a spare node (run_failure when none answers).
  void move_to_spare(std::string lost);  // a copy: it rewrites the placements it may refer to
  messages::stage_faults faults_of(int32_t j) const;
  /// Everything the stages of nodes the heartbeats declared lost still send is dropped and counted.
  void fence_lost_nodes();
  /// Tells the coordinator which nodes the pipeline uses now (a lost one fails the attempt).
  void place_nodes();

  config::run_config config_;
  optimizer_settings optimizer_;
  std::shared_ptr<data_feed> feed_;
  std::shared_ptr<data_feed> waves_;
  control_channel& control_;
  std::shared_ptr<backend> loss_device_;
  std::shared_ptr<training::trace_recorder> trace_;
  std::vector<messages::stage_actor> stages_;
  messages::loss_actor loss_;
  messages::loader_actor loader_;
  std::map<std::string, messages::node_actor> nodes_;
  std::vector<std::string> placement_;  // per stage: local or host:port (after any move to a spare)
  std::vector<std::string> spares_;
  int32_t loader_credits_ = 1;             // micro-batches the loader may have in flight
  std::shared_ptr<sim_devices> sim_;       // this build's simulated devices: a stage rebuilt alone joins them
  caf::actor heartbeats_;                  // the nodes' monitor (actors/heartbeat.hpp)
  std::vector<int32_t> stage_generation_;  // per stage: its messages' stamp::generation
  int32_t newest_generation_ = 0;          // a stage rebuilt alone gets a newer one than any before
  int32_t generation_ = 0;
  bool kills_sent_ = false;
  bool all_crashes_fired_ = false;
  std::set<int32_t> crashes_fired_;
  std::set<int32_t> bursts_fired_;
};

}  // namespace petra
