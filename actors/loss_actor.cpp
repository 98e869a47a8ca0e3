// The loss actor.
#include "actors/loss_actor.hpp"

#include <caf/all.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "actors/control.hpp"
#include "compute/forward/stacked.hpp"
#include "compute/pipeline/fg_stage.hpp"
#include "messages/errors.hpp"
#include "training/loss_cut.hpp"
#include "training/recent_ids.hpp"

namespace petra {
namespace {

using namespace messages;
using namespace atoms;

struct loss_actor_state {
  std::shared_ptr<backend> device;
  int64_t progress_every = 0;
  std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();
  loss_sink last_stage;
  std::vector<derivatives_sink> stage_sinks;  // forward_gradient: where each stage's derivatives go
  coordinator_actor coordinator;
  credit_sink loader;  // async: an evaluation batch's credit goes back when it is scored (else invalid)
  int64_t per_epoch = 0, wave_size = 0;
  // Keyed by (wave's epoch or -1 for training, micro-batch or place in the wave).
  std::map<std::pair<int32_t, int64_t>, std::vector<int32_t>> labels;  // not yet used
  std::map<std::pair<int32_t, int64_t>, logits_data> waiting;          // whose labels are not here yet
  training::loss_ledger ledger;    // the phase's totals, the open epochs and waves
  std::set<int64_t> cancelled;     // micro-batches lost in a stage-local recovery: late logits are dropped
  std::set<int64_t> coming_again;  // cancelled, and re-issued by the loader: taken in when their labels come
  training::recent_ids scored;  // the newest training micro-batches scored (a re-issue is not scored twice)
  int64_t abandoned_cuts = -1;  // cuts given up in a stage-local recovery: their markers are ignored
  training::loss_cut_assembly cuts;  // parts taken at the last stage's marker, awaiting the loader's
  std::shared_ptr<training::trace_recorder> trace;
  training::trace_track track;
  int32_t stages = 1;
  int32_t last_generation = 0;  // the wired last stage's: older logits come from one declared lost
  static inline const char* name = "petra.loss";
};

using self_ptr = loss_actor::stateful_pointer<loss_actor_state>;

constexpr std::chrono::milliseconds progress_interval{250};

loss_report report_of(const run_totals& t) {
  return loss_report{t.micro_batches, t.samples, t.correct, t.loss_sum};
}

loss_data compute_loss(loss_actor_state& st, const stamp& s, const tensor& logits,
                       const std::vector<int32_t>& labels, bool train) {
  loss_data out;
  out.s = s;
  out.loss = st.device->softmax_cross_entropy(logits, labels, train ? &out.dlogits : nullptr, &out.correct);
  out.samples = static_cast<int64_t>(labels.size());
  return out;
}

/// forward_gradient: each logits tangent, dotted per sample with the loss gradient, goes home to the
/// stage whose guess it carries, for the tick after the logits' (the only message upstream).
void send_derivatives(self_ptr self, const logits_data& in, const tensor& dlogits) {
  auto& st = self->state;
  if (in.tangents.empty()) return;
  std::vector<tensor> logits_dots;
  for (const stage_tangent& t : in.tangents) {
    if (t.origin < 0 || static_cast<std::size_t>(t.origin) >= st.stage_sinks.size())
      throw std::invalid_argument("logits of micro-batch " + std::to_string(in.s.micro_batch) +
                                  " carry a tangent of stage " + std::to_string(t.origin + 1) + " of " +
                                  std::to_string(st.stage_sinks.size()));
    logits_dots.push_back(t.direction.x1);
  }
  // Every tangent in one product with the loss gradient: stacked along the batch (no copy when they
  // arrive back to back, as the last stage's stacked pass leaves them in one process).
  std::vector<std::vector<float>> per_tangent =
      loss_derivatives_per_tangent(*st.device, dlogits, stack_batches(*st.device, logits_dots));
  for (std::size_t g = 0; g < in.tangents.size(); ++g) {
    stamp s = in.s;
    ++s.tick;
    const int32_t origin = in.tangents[g].origin;
    self->send(st.stage_sinks[static_cast<std::size_t>(origin)],
               derivatives_data{s, origin, std::move(per_tangent[g])});
  }
}

/// The training loss of one micro-batch, to the last stage; progress to the coordinator.
void answer(self_ptr self, const logits_data& in, const std::vector<int32_t>& labels) {
  auto& st = self->state;
  const int64_t id = in.s.micro_batch;
  std::optional<training::loss_ledger::epoch_tally> epoch_done;
  try {
    const auto begin = training::trace_clock::now();
    loss_data out = compute_loss(st, in.s, in.logits, labels, true);
    // A micro-batch scored before it was lost (its backward went with a stage) counts once: its
    // re-issue gets its gradient, the ledger keeps the first score.
    // (Remembered: training::remembered_ids of them; at most the loader's window, runtime.credits,
    // 2J − 1 by default, is in flight at once.)
    if (st.scored.insert(id)) {
      epoch_done = st.ledger.score_train(id, st.per_epoch, out.loss, out.correct, out.samples);
    }
    send_derivatives(self, in, out.dlogits);
    self->send(st.last_stage, std::move(out));
    if (st.trace && st.trace->records(id)) {
      const auto end = training::trace_clock::now();
      using training::flow_kind;
      st.trace->span(st.track, "loss", begin, end, id, {{"micro_batch", id}});
      st.trace->flow_in(st.track, training::trace_flow_id(flow_kind::forward, st.stages - 1, id, id), begin,
                        id);
      st.trace->flow_out(st.track, training::trace_flow_id(flow_kind::backward, st.stages, id, id),
                         begin + (end - begin) / 2, id);
    }
  } catch (const std::exception& e) {
    const std::string what = "loss of micro-batch " + std::to_string(in.s.micro_batch) + ": " + e.what();
    self->send(st.coordinator, failure_report{-1, in.s.tick, in.s.micro_batch,
                                              static_cast<uint8_t>(petra_errc::stage_exception), what, 0});
    return self->quit(caf::make_error(petra_errc::stage_exception, what));
  }
  // Every progress_every micro-batches, and at least every progress_interval: the coordinator's stall
  // wait (faults.stall_seconds, 1 s or more) restarts on each report, so a run slower than
  // progress_every micro-batches per stall wait is not taken for a stalled one.
  const auto now = std::chrono::steady_clock::now();
  if (st.progress_every > 0 && (st.ledger.totals.micro_batches % st.progress_every == 0 ||
                                now - st.last_progress >= progress_interval)) {
    st.last_progress = now;
    self->send(st.coordinator, report_of(st.ledger.totals));
  }
  if (epoch_done)
    self->send(st.coordinator, epoch_loss_report{epoch_done->epoch, report_of(epoch_done->totals)});
}

/// An evaluation batch of a wave: scored; the wave's result to the coordinator when complete.
void score_eval(self_ptr self, const logits_data& in, const std::vector<int32_t>& labels) {
  auto& st = self->state;
  int64_t correct = 0;
  const double loss = st.device->softmax_cross_entropy(in.logits, labels, nullptr, &correct);
  const auto wave =
      st.ledger.score_eval(in.eval_epoch, st.wave_size, loss, correct, static_cast<int64_t>(labels.size()));
  if (st.loader) self->send(st.loader, credit_return{1, in.s.phase});
  if (wave)
    self->send(st.coordinator, eval_report{in.eval_epoch, wave->loss_sum, wave->correct, wave->samples});
}

/// The loss side's part of a cut: the ledger (the phase's totals so far, the open epochs' and waves'
/// tallies) and the labels kept; how many logits wait for theirs.
training::loss_cut part_of(const loss_actor_state& st) {
  training::loss_cut part;
  static_cast<training::loss_ledger&>(part) = st.ledger;
  for (const auto& [key, labels] : st.labels) part.labels.push_back({key.first, key.second, labels});
  part.waiting = static_cast<int64_t>(st.waiting.size());
  return part;
}

/// Logits and labels met: a training loss or an evaluation batch.
void score(self_ptr self, const logits_data& in, const std::vector<int32_t>& labels) {
  if (in.eval_epoch >= 0)
    score_eval(self, in, labels);
  else
    answer(self, in, labels);
}

loss_actor::behavior_type loss_behavior(self_ptr self, std::shared_ptr<backend> device,
                                        int64_t progress_every,
                                        std::shared_ptr<training::trace_recorder> trace, int32_t stages) {
  self->state.device = std::move(device);
  self->state.progress_every = progress_every;
  if (trace) self->state.track = trace->track("coordinator", "loss");
  self->state.trace = std::move(trace);
  self->state.stages = stages;
  return {
      [=](loss_links& links) {
        auto& st = self->state;
        st.last_stage = std::move(links.last_stage);
        st.stage_sinks = std::move(links.stages);
        st.coordinator = std::move(links.coordinator);
        st.loader = std::move(links.loader);
        st.per_epoch = links.per_epoch;
        st.wave_size = links.wave_size;
        st.last_generation = links.last_generation;
        return wire_atom_v;
      },
      [=](labels_data& in) {
        auto& st = self->state;
        st.cuts.labels_came(in.eval_epoch, in.micro_batch, in.labels);
        if (in.eval_epoch < 0 && st.coming_again.erase(in.micro_batch) > 0)
          st.cancelled.erase(in.micro_batch);  // re-issued: its logits come again
        const auto key = std::make_pair(in.eval_epoch, in.micro_batch);
        auto w = st.waiting.find(key);
        if (w == st.waiting.end()) {
          st.labels[key] = std::move(in.labels);
          return;
        }
        const logits_data logits = std::move(w->second);
        st.waiting.erase(w);
        score(self, logits, in.labels);
      },
      [=](logits_data& in) {
        auto& st = self->state;
        if (in.eval_epoch < 0 && st.cancelled.count(in.s.micro_batch) > 0) return;
        if (in.s.generation < st.last_generation) return;  // a last stage declared lost that woke up
        const auto key = std::make_pair(in.eval_epoch, in.s.micro_batch);
        auto it = st.labels.find(key);
        if (it == st.labels.end()) {
          st.waiting.emplace(key, std::move(in));
          return;
        }
        const std::vector<int32_t> labels = std::move(it->second);
        st.labels.erase(it);
        score(self, in, labels);
      },
      [=](eval_atom, logits_data& logits, labels_data& labels) -> caf::result<loss_data> {
        try {
          return compute_loss(self->state, logits.s, logits.logits, labels.labels, false);
        } catch (const std::exception& e) {
          return caf::make_error(petra_errc::bad_request, std::string("evaluation loss: ") + e.what());
        }
      },
      [=](const cut_marker& marker) {
        // The last stage's: every logits message it sent before the cut is in. The labels kept
        // (also those of micro-batches the loader sent after the cut: it sends them again), the
        // totals so far and the epochs' partial sums make the loss side's part, to which labels that
        // come before the loader's marker are added (training::loss_cut_assembly).
        auto& st = self->state;
        const int64_t tick = marker.tick;
        if (tick <= st.abandoned_cuts) return;
        std::optional<training::loss_cut> whole =
            marker.from_loader ? st.cuts.loader_marker(tick) : st.cuts.stage_marker(tick, part_of(st));
        if (whole) self->send(st.coordinator, cut_part{-1, tick, 0, {}, training::encode(*whole)});
      },
      [=](state_atom) -> caf::result<std::string> {
        // Drained: the open epochs' tallies, for the loss actor of a pipeline built anew on another
        // cut of the model, so that the running epoch's line counts all of its micro-batches.
        auto& st = self->state;
        if (!st.waiting.empty())  // logits without their labels: the part cannot hold them
          return caf::make_error(petra_errc::bad_request, "loss actor: asked for its ledger while " +
                                                              std::to_string(st.waiting.size()) +
                                                              " logits wait for their labels: the "
                                                              "pipeline is not drained");
        return training::encode(part_of(st));
      },
      [=](restore_atom, const cut_part& from) -> caf::result<restore_atom> {
        auto& st = self->state;
        try {
          const training::loss_cut part = training::decode_loss_cut(from.meta);
          for (const auto& l : part.labels) st.labels[{l.eval_epoch, l.id}] = l.labels;
          st.ledger = part;  // the ledger as it stood at the cut
          return restore_atom_v;
        } catch (const std::exception& e) {
          return caf::make_error(petra_errc::bad_request, std::string("loss actor: ") + e.what());
        }
      },
      [=](report_atom) {
        const loss_report out = report_of(self->state.ledger.end_phase());
        self->state.cancelled.clear();
        self->state.coming_again.clear();
        self->state.scored.clear();
        self->state.abandoned_cuts = -1;
        self->state.cuts.clear();
        return out;
      },
      [=](hold_atom) { return self->state.ledger.eval_scored; },
      [=](recover_atom, const recovery_order& order) {
        auto& st = self->state;
        st.abandoned_cuts = std::max(st.abandoned_cuts, order.abandon_cuts);
        st.cuts.abandon_upto(st.abandoned_cuts);
        for (int64_t id : order.cancel) {
          st.cancelled.insert(id);
          st.labels.erase({-1, id});
          st.waiting.erase({-1, id});
        }
        st.coming_again.insert(order.reissue.begin(), order.reissue.end());
        return recover_atom_v;
      },
  };
}

}  // namespace

messages::loss_actor spawn_loss_actor(caf::actor_system& sys, std::shared_ptr<backend> device,
                                      int64_t progress_every, std::shared_ptr<training::trace_recorder> trace,
                                      int32_t stages) {
  return sys.spawn(loss_behavior, std::move(device), progress_every, std::move(trace), stages);
}

}  // namespace petra
