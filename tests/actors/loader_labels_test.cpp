// The loader sends each training micro-batch's labels to the loss actor, and beside the images to
// stage 1 only when the stages need them (forward gradients' auxiliary heads): under any other
// method stage 1's forward messages carry the images alone.
#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/caf_config.hpp"
#include "actors/loader_actor.hpp"
#include "datasets/in_memory_source.hpp"

using namespace petra;
using namespace petra::messages;
using namespace petra::atoms;

namespace {

struct seen {
  std::vector<std::size_t> labels_to_stage;  // per training micro-batch sent to stage 1
  int labels_to_loss = 0;
};

caf::behavior recorder(caf::event_based_actor*, std::shared_ptr<seen> log) {
  return {
      [=](forward_data& f) {
        if (f.x.defined()) log->labels_to_stage.push_back(f.labels.size());
      },
      [=](labels_data& l) { log->labels_to_loss += !l.labels.empty(); },
  };
}

/// 24 images of 1×4×4, labels i mod 5: 6 micro-batches of 4.
std::shared_ptr<data_feed> feed() {
  auto d = std::make_shared<data::dataset>();
  d->name = "synthetic/train";
  d->count = 24, d->channels = 1, d->height = 4, d->width = 4, d->num_classes = 5;
  d->pixels.assign(static_cast<std::size_t>(d->count * d->image_size()), 7);
  for (int64_t i = 0; i < d->count; ++i) d->labels.push_back(static_cast<int32_t>(i % 5));
  feed_options o;
  o.micro_batch = 4;
  o.workers = 0;
  return std::make_shared<data_feed>(std::make_shared<data::in_memory_source>(d, data::augment_options{}), o);
}

/// What stage 1 and the loss actor get from a lockstep loader over one phase of 6 micro-batches.
seen one_phase(bool labels_to_stages) {
  caf_config cfg{1};
  cfg.set("scheduler.policy", caf::atom("testing"));
  caf::actor_system sys(cfg);
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  auto log = std::make_shared<seen>();
  auto sink = sys.spawn(recorder, log);
  auto loader = spawn_loader_actor(sys, feed(), nullptr, config::runtime_mode::lockstep, labels_to_stages);
  caf::anon_send(loader,
                 loader_links{caf::actor_cast<forward_sink>(sink), caf::actor_cast<loss_actor>(sink), 6});
  phase_plan plan;
  plan.epoch = 1;
  plan.micro_batches = 6;
  plan.ticks = 6;
  plan.per_epoch = 6;
  caf::anon_send(loader, plan_atom_v, plan);
  sched.run();
  caf::anon_send_exit(loader, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  sched.run();
  return *log;
}

}  // namespace

TEST_CASE("stage 1's forward messages carry labels only when the stages need them") {
  const seen plain = one_phase(false);
  CHECK(plain.labels_to_stage == std::vector<std::size_t>(6, 0));
  CHECK(plain.labels_to_loss == 6);
  const seen with_heads = one_phase(true);
  CHECK(with_heads.labels_to_stage == std::vector<std::size_t>(6, 4));
  CHECK(with_heads.labels_to_loss == 6);
}
