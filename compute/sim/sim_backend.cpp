// The sim backend's construction, its memory ops and the hand-over (export_for / import).
#include "compute/sim/sim_backend.hpp"

#include <stdexcept>

#include "compute/cpu/cpu_backend.hpp"
#include "compute/op_checks.hpp"
#include "compute/sim/sim_device.hpp"
#include "compute/sim/sim_devices.hpp"
#include "compute/sim/sim_storage.hpp"

namespace petra {

namespace {

/// Worker side: a copy of host tensor `t` in the kernels' recycled buffers (fresh pages would
/// cost the copy its page faults).
tensor copy_of(cpu_backend& cpu, const tensor& t) {
  tensor out = cpu.empty(t.shape());
  cpu.copy(t, out);
  return out;
}

}  // namespace

sim_backend::sim_backend(std::shared_ptr<sim::device_worker> on, const sim_options& options)
    : device_(std::move(on)), options_(options) {
  kernels_ = std::make_unique<cpu_backend>(options.threads, options.precision);  // checks the thread count
  stream_ = device_->open_stream(options.latency_us);
}

sim_backend::~sim_backend() {
  // The queued ops use kernels_: they run (or are skipped after a failure) before it goes.
  device_->close_stream(stream_);
}

device sim_backend::where() const { return device{device_type::sim, device_->index()}; }

std::string sim_backend::name() const {
  std::string text = where().str() + " (stream " + std::to_string(stream_->id()) + ", CPU kernels, " +
                     std::to_string(options_.threads) + " threads";
  if (rounds_to_bf16(options_.precision)) text += std::string(", ") + to_string(options_.precision);
  if (options_.latency_us) text += ", " + std::to_string(options_.latency_us) + " µs per op";
  if (options_.skip_import_wait) text += ", import does not wait";
  return text + ")";
}

uint64_t sim_backend::stream_id() const { return stream_->id(); }

tensor sim_backend::output(const shape_t& shape) {
  const auto bytes = static_cast<std::size_t>(numel_of(shape)) * sizeof(float);
  return tensor(
      shape, std::make_shared<sim::sim_storage>(bytes, device_->index(), stream_->id(), device_->memory()));
}

void sim_backend::check_usable(const char* op, const char* name, const tensor& t) const {
  const sim::sim_storage& s = sim::storage_of(t);
  if (!s.usable_by(stream_->id()))
    fail_op(
        op,
        std::string(name) + " " + t.shape_str() + " was made on stream " + std::to_string(s.owner()) +
            " of " + where().str() + " and this backend (stream " + std::to_string(stream_->id()) +
            ") has not imported it: the hand-over is missing (export_for on its maker, then import here)");
}

uint64_t sim_backend::enqueue(std::function<void(cpu_backend&)> work) {
  return device_->enqueue(*stream_, [kernels = kernels_.get(), work = std::move(work)] { work(*kernels); });
}

tensor sim_backend::download(const tensor& t) {
  auto result = std::make_shared<tensor>();
  const uint64_t done = enqueue([t, result](cpu_backend& cpu) { *result = copy_of(cpu, sim::host_view(t)); });
  device_->wait(*stream_, done);
  return *result;
}

tensor sim_backend::empty_impl(const shape_t& shape) { return output(shape); }

tensor sim_backend::zeros_impl(const shape_t& shape) {
  tensor t = output(shape);
  enqueue([t](cpu_backend& cpu) { sim::storage_of(t).install(cpu.zeros(t.shape())); });
  return t;
}

tensor sim_backend::from_host_impl(const tensor& host) {
  tensor t = output(host.shape());
  // The caller may change `host` once this returns: the values are taken now, installed in order.
  enqueue([t, values = host.clone()](cpu_backend&) { sim::storage_of(t).install(values); });
  return t;
}

tensor sim_backend::to_host_impl(const tensor& t) { return download(t); }

void sim_backend::copy_impl(const tensor& src, tensor& dst) {
  enqueue([src, dst](cpu_backend& cpu) {
    tensor out = sim::host_view(dst);
    cpu.copy(sim::host_view(src), out);
  });
}

void sim_backend::fill_zero_impl(tensor& t) {
  enqueue([t](cpu_backend& cpu) {
    tensor out = sim::host_view(t);
    cpu.fill_zero(out);
  });
}

void sim_backend::synchronize_impl() { device_->drain(*stream_); }

int64_t sim_backend::device_bytes_in_use() const { return device_->memory()->bytes.load(); }

tensor sim_backend::export_for_impl(const tensor& t, const device& consumer) {
  if (consumer.type == device_type::sim) {
    // This device or another simulated one: the consumer waits for this point (and copies).
    sim::storage_of(t).set_ready(device_->enqueue_record(*stream_));
    return t;
  }
  // The host, a CPU stage, a GPU or another process: a host copy, once it is made.
  return download(t);
}

tensor sim_backend::import_impl(const tensor& t) {
  const device from = t.where();
  if (from.type == device_type::cpu) {
    // A host tensor of a message is never written again: the upload reads it when its turn comes.
    tensor mine = output(t.shape());
    enqueue([mine, t](cpu_backend& cpu) { sim::storage_of(mine).install(copy_of(cpu, t)); });
    return mine;
  }
  if (from.type != device_type::sim)
    fail_op("import", "the tensor " + t.shape_str() + " lives on " + from.str() + ": a GPU and " +
                          where().str() + " exchange tensors through the host (export_for cpu on its maker)");
  sim::sim_storage& theirs = sim::storage_of(t);
  if (from == where() && theirs.usable_by(stream_->id())) return t;  // this stream's already
  const std::shared_ptr<sim::event> ready = theirs.ready();
  if (!ready)
    fail_op("import", "the tensor " + t.shape_str() + " of " + from.str() + " (stream " +
                          std::to_string(theirs.owner()) +
                          ") was not exported: its maker must call export_for before it is sent");
  if (!options_.skip_import_wait) device_->enqueue_wait(*stream_, ready);
  if (from == where()) {
    theirs.add_user(stream_->id());  // the same memory: no copy
    return t;
  }
  // Another simulated device: a copy here once the producer's point is passed.
  tensor mine = output(t.shape());
  enqueue([mine, t](cpu_backend& cpu) { sim::storage_of(mine).install(copy_of(cpu, sim::host_view(t))); });
  return mine;
}

std::unique_ptr<backend> make_sim_backend(sim_devices& devices, int index, const sim_options& options) {
  return std::make_unique<sim_backend>(devices.get(index), options);
}

}  // namespace petra
