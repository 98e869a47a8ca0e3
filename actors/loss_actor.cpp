// The loss actor.
#include "actors/loss_actor.hpp"

#include <caf/all.hpp>
#include <map>

namespace petra {
namespace {

using namespace messages;
using namespace atoms;

struct loss_actor_state {
  std::shared_ptr<backend> device;
  caf::actor progress_to;
  int64_t progress_every = 0;
  std::map<int64_t, std::vector<int32_t>> labels;  // micro-batch → labels not yet used
  std::map<int64_t, std::pair<caf::typed_response_promise<loss_data>, logits_data>> waiting;
  loss_report totals;
};

using self_ptr = loss_actor::stateful_pointer<loss_actor_state>;

loss_data compute_loss(loss_actor_state& st, const tensor& logits, const std::vector<int32_t>& labels, bool train) {
  loss_data out;
  tensor* want_grad = train ? &out.dlogits : nullptr;
  out.loss = st.device->softmax_cross_entropy(logits, labels, want_grad, &out.correct);
  out.samples = static_cast<int64_t>(labels.size());
  if (train) {
    ++st.totals.micro_batches;
    st.totals.samples += out.samples;
    st.totals.correct += out.correct;
    st.totals.loss_sum += out.loss;
  }
  return out;
}

void maybe_report(self_ptr self) {
  auto& st = self->state;
  if (st.progress_to && st.progress_every > 0 && st.totals.micro_batches % st.progress_every == 0)
    caf::anon_send(st.progress_to, st.totals);
}

loss_actor::behavior_type loss_behavior(self_ptr self, std::shared_ptr<backend> device, caf::actor progress_to,
                                        int64_t progress_every) {
  self->state.device = std::move(device);
  self->state.progress_to = std::move(progress_to);
  self->state.progress_every = progress_every;
  return {
      [=](labels_data& in) {
        auto& st = self->state;
        auto w = st.waiting.find(in.micro_batch);
        if (w == st.waiting.end()) {
          st.labels[in.micro_batch] = std::move(in.labels);
          return;
        }
        try {
          w->second.first.deliver(compute_loss(st, w->second.second.logits, in.labels, true));
        } catch (const std::exception& e) {
          w->second.first.deliver(caf::make_error(caf::sec::runtime_error, e.what()));
        }
        st.waiting.erase(w);
        maybe_report(self);
      },
      [=](logits_data& in) -> caf::result<loss_data> {
        auto& st = self->state;
        auto it = st.labels.find(in.s.micro_batch);
        if (it == st.labels.end()) {
          auto promise = self->make_response_promise<loss_data>();
          st.waiting.emplace(in.s.micro_batch, std::make_pair(promise, std::move(in)));
          return promise;
        }
        try {
          loss_data out = compute_loss(st, in.logits, it->second, true);
          st.labels.erase(it);
          maybe_report(self);
          return out;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, "loss of micro-batch " + std::to_string(in.s.micro_batch) +
                                                               ": " + e.what());
        }
      },
      [=](eval_atom, logits_data& logits, labels_data& labels) -> caf::result<loss_data> {
        try {
          return compute_loss(self->state, logits.logits, labels.labels, false);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, std::string("evaluation loss: ") + e.what());
        }
      },
      [=](report_atom) {
        loss_report out = self->state.totals;
        self->state.totals = loss_report{};
        return out;
      },
  };
}

}  // namespace

messages::loss_actor spawn_loss_actor(caf::actor_system& sys, std::shared_ptr<backend> device, caf::actor progress_to,
                                      int64_t progress_every) {
  return sys.spawn(loss_behavior, std::move(device), std::move(progress_to), progress_every);
}

}  // namespace petra
