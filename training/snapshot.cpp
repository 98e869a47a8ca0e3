// Snapshots as files: per stage its tensors by name, the rest in the file's metadata as JSON.
//   param/, momentum/, buffer/          the stage's state (as in a checkpoint)
//   kept/<i>/x1|x2                      the input kept for outstanding forward i
//   stash/<v>/<p>                       stashed weight version v, parameter p
//   grad/<p>                            gradients accumulated toward the next optimizer step
//   forward/x1|x2, backward/{rebuilt,grad}.x1|x2, eval/x1|x2   the messages across the cut
//   queue/<i>/x.x1|x2, queue/<i>/eval.x1|x2, back/<i>/{rebuilt,grad}.x1|x2, loss/{rebuilt,grad}.x1|x2
//                                       async: the queued and recorded messages
#include "training/snapshot.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "compute/serialize/atomic_file.hpp"
#include "compute/serialize/safetensors.hpp"
#include "training/report_codec.hpp"

namespace petra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* format_name = "petra-snapshot-1";

void put(named_tensors& out, const std::string& name, const activation& a) {
  if (a.x1.defined()) out.emplace_back(name + "x1", a.x1);
  if (a.x2.defined()) out.emplace_back(name + "x2", a.x2);
}

activation take(const safetensors_file& f, const std::string& name) {
  activation a;
  if (f.contains(name + "x1")) a.x1 = f.find(name + "x1");
  if (f.contains(name + "x2")) a.x2 = f.find(name + "x2");
  return a;
}

json encode_async(const async_cut& a, named_tensors& tensors) {
  json queue = json::array(), back = json::array();
  for (std::size_t i = 0; i < a.forwards.size(); ++i) {
    const cut_queued& q = a.forwards[i];
    queue.push_back({{"id", q.id}, {"eval_epoch", q.eval.epoch}, {"eval_index", q.eval.index}});
    put(tensors, "queue/" + std::to_string(i) + "/x.", q.x);
    put(tensors, "queue/" + std::to_string(i) + "/eval.", q.eval.images);
  }
  for (std::size_t i = 0; i < a.backwards.size(); ++i) {
    back.push_back(a.backwards[i].id);
    put(tensors, "back/" + std::to_string(i) + "/rebuilt.", a.backwards[i].rebuilt);
    put(tensors, "back/" + std::to_string(i) + "/grad.", a.backwards[i].grad);
  }
  put(tensors, "loss/rebuilt.", a.loss.rebuilt);
  put(tensors, "loss/grad.", a.loss.grad);
  return {{"forwards_done", a.forwards_done},
          {"backwards_done", a.backwards_done},
          {"evals_done", a.evals_done},
          {"queue", queue},
          {"back", back},
          {"loss_id", a.loss.id}};
}

async_cut decode_async(const json& meta, const safetensors_file& f) {
  async_cut a;
  a.present = true;
  a.forwards_done = meta.at("forwards_done").get<int64_t>();
  a.backwards_done = meta.at("backwards_done").get<int64_t>();
  a.evals_done = meta.at("evals_done").get<int64_t>();
  std::size_t i = 0;
  for (const json& q : meta.at("queue")) {
    cut_queued e;
    e.id = q.at("id").get<int64_t>();
    e.eval.epoch = q.at("eval_epoch").get<int32_t>();
    e.eval.index = q.at("eval_index").get<int64_t>();
    e.x = take(f, "queue/" + std::to_string(i) + "/x.");
    e.eval.images = take(f, "queue/" + std::to_string(i) + "/eval.");
    if (!e.x.x1.defined() && !e.eval.images.x1.defined())
      throw std::runtime_error("queued message " + std::to_string(i) + " has no tensor");
    a.forwards.push_back(std::move(e));
    ++i;
  }
  i = 0;
  for (const json& id : meta.at("back")) {
    cut_backward b;
    b.id = id.get<int64_t>();
    b.rebuilt = take(f, "back/" + std::to_string(i) + "/rebuilt.");
    b.grad = take(f, "back/" + std::to_string(i) + "/grad.");
    if (!b.grad.x1.defined())
      throw std::runtime_error("recorded backward " + std::to_string(i) + " has no gradient");
    a.backwards.push_back(std::move(b));
    ++i;
  }
  a.loss.id = meta.at("loss_id").get<int64_t>();
  a.loss.rebuilt = take(f, "loss/rebuilt.");
  a.loss.grad = take(f, "loss/grad.");
  if (a.loss.id >= 0 && (!a.loss.rebuilt.x1.defined() || !a.loss.grad.x1.defined()))
    throw std::runtime_error("the output awaiting the loss, or the loss's answer, is missing");
  return a;
}

}  // namespace

encoded_stage_cut encode_stage_cut(const stage_cut& c) {
  named_tensors tensors;
  for (const named_tensor& t : c.state.tensors) tensors.emplace_back(t.name, t.value);
  json outstanding = json::array(), stash = json::array();
  for (std::size_t i = 0; i < c.inflight.outstanding.size(); ++i) {
    const auto& e = c.inflight.outstanding[i];
    outstanding.push_back({{"id", e.id}, {"version", e.version}, {"tick", e.tick}, {"kept", e.kept}});
    put(tensors, "kept/" + std::to_string(i) + "/", e.input);
  }
  for (const auto& e : c.inflight.stash) {
    stash.push_back({{"version", e.version}, {"users", e.users}, {"tensors", e.weights.size()}});
    for (std::size_t p = 0; p < e.weights.size(); ++p)
      tensors.emplace_back("stash/" + std::to_string(e.version) + "/" + std::to_string(p), e.weights[p]);
  }
  for (std::size_t p = 0; p < c.inflight.grads.size(); ++p)
    tensors.emplace_back("grad/" + std::to_string(p), c.inflight.grads[p]);
  put(tensors, "forward/", c.forward.x);
  put(tensors, "backward/rebuilt.", c.backward.rebuilt);
  put(tensors, "backward/grad.", c.backward.grad);
  put(tensors, "eval/", c.eval.images);
  json meta = {
      {"stage", c.state.stage},
      {"optimizer_steps", c.state.optimizer_steps},
      {"state_tensors", c.state.tensors.size()},
      {"outstanding", outstanding},
      {"stash", stash},
      {"accumulated", c.inflight.accumulated},
      {"grads", c.inflight.grads.size()},
      {"stats", stats_to_json(c.inflight.stats)},
      {"fallback", {{"keeping", c.inflight.fallback.keeping}, {"window", c.inflight.fallback.window}}},
      {"forward_id", c.forward.id},
      {"backward_id", c.backward.id},
      {"eval", {{"epoch", c.eval.epoch}, {"index", c.eval.index}, {"labels", c.eval.labels}}}};
  if (c.async.present) meta["async"] = encode_async(c.async, tensors);
  encoded_stage_cut out;
  for (auto& [name, t] : tensors) out.tensors.push_back({name, t});
  out.meta = meta.dump();
  return out;
}

stage_cut decode_stage_cut(const std::vector<named_tensor>& tensors, const std::string& meta_text,
                           std::size_t expect, const std::string& where) {
  safetensors_file f;  // the lookups by name
  f.path = where;
  for (const named_tensor& t : tensors) f.tensors.emplace_back(t.name, t.value);
  stage_cut c;
  try {
    const json meta = json::parse(meta_text);
    c.state.stage = meta.at("stage").get<int32_t>();
    if (c.state.stage != static_cast<int32_t>(expect))
      throw std::runtime_error("it holds stage " + std::to_string(c.state.stage + 1) + ", expected " +
                               std::to_string(expect + 1));
    c.state.optimizer_steps = meta.at("optimizer_steps").get<int64_t>();
    const auto state_tensors = meta.at("state_tensors").get<std::size_t>();
    if (state_tensors > f.tensors.size()) throw std::runtime_error("fewer tensors than its state names");
    for (std::size_t i = 0; i < state_tensors; ++i)
      c.state.tensors.push_back({f.tensors[i].first, f.tensors[i].second});
    std::size_t i = 0;
    for (const json& e : meta.at("outstanding")) {
      c.inflight.outstanding.push_back(
          {e.at("id").get<int64_t>(), e.at("version").get<int64_t>(), e.at("tick").get<int64_t>(),
           take(f, "kept/" + std::to_string(i++) + "/"), e.value("kept", false)});
    }
    for (const json& e : meta.at("stash")) {
      stage::inflight::stash_entry s;
      s.version = e.at("version").get<int64_t>();
      s.users = e.at("users").get<int64_t>();
      for (std::size_t p = 0; p < e.at("tensors").get<std::size_t>(); ++p)
        s.weights.push_back(f.find("stash/" + std::to_string(s.version) + "/" + std::to_string(p)));
      c.inflight.stash.push_back(std::move(s));
    }
    c.inflight.accumulated = meta.at("accumulated").get<int64_t>();
    for (std::size_t p = 0; p < meta.at("grads").get<std::size_t>(); ++p)
      c.inflight.grads.push_back(f.find("grad/" + std::to_string(p)));
    c.inflight.stats = stats_from_json(meta.at("stats"));
    if (meta.contains("fallback")) {  // snapshots of runs before the fallback have none
      c.inflight.fallback.keeping = meta.at("fallback").at("keeping").get<bool>();
      for (const json& e : meta.at("fallback").at("window"))  // JSON writes a NaN error as null
        c.inflight.fallback.window.push_back(e.is_null() ? std::nan("") : e.get<double>());
    }
    c.forward.id = meta.at("forward_id").get<int64_t>();
    c.forward.x = take(f, "forward/");
    c.backward.id = meta.at("backward_id").get<int64_t>();
    c.backward.rebuilt = take(f, "backward/rebuilt.");
    c.backward.grad = take(f, "backward/grad.");
    const json& eval = meta.at("eval");
    c.eval.epoch = eval.at("epoch").get<int32_t>();
    c.eval.index = eval.at("index").get<int64_t>();
    c.eval.labels = eval.at("labels").get<std::vector<int32_t>>();
    c.eval.images = take(f, "eval/");
    if (meta.contains("async")) c.async = decode_async(meta.at("async"), f);
  } catch (const std::exception& e) {
    throw std::runtime_error("snapshot part '" + where + "' is damaged: " + e.what());
  }
  return c;
}

namespace {

void write_stage(const std::string& path, const stage_cut& c) {
  const encoded_stage_cut e = encode_stage_cut(c);
  named_tensors tensors;
  for (const named_tensor& t : e.tensors) tensors.emplace_back(t.name, t.value);
  save_safetensors(path, tensors, {{"format", format_name}, {"stage", e.meta}});
}

stage_cut read_stage(const std::string& path, std::size_t expect) {
  const safetensors_file f = load_safetensors(path);
  auto format = f.metadata.find("format");
  if (format == f.metadata.end() || format->second != format_name || !f.metadata.count("stage"))
    throw std::runtime_error("'" + path + "' is not a petra snapshot stage file");
  std::vector<named_tensor> tensors;
  for (const auto& [name, t] : f.tensors) tensors.push_back({name, t});
  return decode_stage_cut(tensors, f.metadata.at("stage"), expect, path);
}

}  // namespace

std::string snapshot_manifest(const std::string& run_dir) {
  return (fs::path(run_dir) / "snapshot.json").string();
}

void write_snapshot(const std::string& run_dir, const std::string& name, const pipeline_cut& cut,
                    const std::map<std::string, std::string>& metadata) {
  const fs::path root = fs::path(run_dir) / "snapshots";
  const fs::path dir = root / name;
  std::error_code ec;
  fs::remove_all(dir, ec);  // what a killed earlier write of the same name left
  fs::create_directories(dir);
  json files = json::array();
  for (std::size_t j = 0; j < cut.stages.size(); ++j) {
    const std::string file = "stage-" + std::to_string(j + 1) + ".safetensors";
    write_stage((dir / file).string(), cut.stages[j]);
    files.push_back((fs::path("snapshots") / name / file).string());
  }
  json labels = json::array();
  for (const auto& [id, l] : cut.labels) labels.push_back({{"id", id}, {"labels", l}});
  const json manifest = {{"format", format_name},
                         {"tick", cut.tick},
                         {"stages", files},
                         {"labels", labels},
                         {"totals", totals_to_json(cut.totals)},
                         {"in_flight", cut.in_flight},
                         {"completed", cut.completed},
                         {"driver", cut.driver},
                         {"metadata", metadata}};
  write_file_atomically(snapshot_manifest(run_dir), [&](std::ostream& out) { out << manifest.dump(1); });
  for (const auto& entry : fs::directory_iterator(root, ec))  // older snapshots: the manifest moved on
    if (entry.path().filename() != name) fs::remove_all(entry.path(), ec);
}

snapshot read_snapshot(const std::string& run_dir, std::size_t stage_count) {
  snapshot out;
  out.manifest = snapshot_manifest(run_dir);
  json manifest;
  try {
    std::ifstream in(out.manifest);
    if (!in) throw std::runtime_error("cannot open it");
    manifest = json::parse(in);
    if (manifest.at("format").get<std::string>() != format_name)
      throw std::runtime_error("not a petra snapshot");
  } catch (const std::exception& e) {
    throw std::runtime_error("snapshot manifest '" + out.manifest + "': " + e.what());
  }
  auto cut = std::make_shared<pipeline_cut>();
  try {
    out.metadata = manifest.at("metadata").get<std::map<std::string, std::string>>();
    cut->tick = manifest.at("tick").get<int64_t>();
    for (const json& l : manifest.at("labels"))
      cut->labels[l.at("id").get<int64_t>()] = l.at("labels").get<std::vector<int32_t>>();
    cut->totals = totals_from_json(manifest.at("totals"));
    cut->in_flight = manifest.at("in_flight").get<int64_t>();
    cut->completed = manifest.at("completed").get<int64_t>();
    cut->driver = manifest.at("driver").get<std::string>();
  } catch (const std::exception& e) {
    throw std::runtime_error("snapshot manifest '" + out.manifest + "' is damaged: " + e.what());
  }
  const auto files = manifest.at("stages").get<std::vector<std::string>>();
  if (files.size() != stage_count)
    throw std::runtime_error("snapshot '" + out.manifest + "' holds " + std::to_string(files.size()) +
                             " stages but the pipeline has " + std::to_string(stage_count));
  for (std::size_t j = 0; j < files.size(); ++j)
    cut->stages.push_back(read_stage((fs::path(run_dir) / files[j]).string(), j));
  out.cut = std::move(cut);
  return out;
}

}  // namespace petra
