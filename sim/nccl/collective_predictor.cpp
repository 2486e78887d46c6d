#include "sim/nccl/collective_predictor.hpp"

#include <algorithm>
#include <cmath>

#include "hardware/errors.hpp"

namespace clustersim::sim::nccl {

CollectivePredictor::CollectivePredictor(PredictorConfig config)
    : config_(std::move(config)),
      version_(NcclVersion::builtin(config_.version)),
      env_(NcclEnv::parse(config_.env, config_.env_location)),
      params_(config_.profile) {
  system_ = std::make_unique<NcclSystem>(NcclSystem::build(config_.node, config_.shape, config_.placement, env_, version_));
  plan_ = search_channels(*system_, version_, env_);
  tuner_ = std::make_unique<Tuner>(*system_, plan_, version_, env_);
  rates_ = resolve_rates(params_, *system_, plan_, version_);
  double sum = 0;
  int count = 0;
  for (const auto& [name, used] : params_.used()) {
    sum += used.uncertainty * used.uncertainty;
    ++count;
  }
  uncertainty_ = count > 0 ? std::sqrt(sum / count) : 0.0;
  // The profile's held-out errors for this predictor's transport, labelled as the fit labels its
  // points (calibrate/nccl_fit.cpp): the ring's transport between nodes, else inside the node ("" for
  // one rank). The section is the fitter's report, kept as written: entries that do not have
  // this shape are left out.
  if (config_.profile != nullptr) {
    const std::string transport = system_->nodes() > 1 ? inter_transport() : intra_transport();
    const nlohmann::json& cv = config_.profile->cross_validation();
    const nlohmann::json* entries = nullptr;
    if (cv.is_object() && cv.contains("nccl") && cv["nccl"].is_object() && cv["nccl"].contains("cross_validation")) {
      entries = &cv["nccl"]["cross_validation"];
    }
    if (entries != nullptr && entries->is_array()) {
      for (const nlohmann::json& e : *entries) {
        if (!e.is_object()) continue;
        const auto op = e.find("op");
        const auto tr = e.find("transport");
        const auto pts = e.find("points");
        const auto med = e.find("median_abs_error");
        if (op == e.end() || tr == e.end() || pts == e.end() || med == e.end() || !op->is_string() ||
            !tr->is_string() || !pts->is_number() || !med->is_number()) {
          continue;
        }
        if (tr->get<std::string>() != transport || pts->get<double>() < kMinHeldOutPoints) continue;
        const double m = med->get<double>();
        if (std::isfinite(m) && m >= 0) held_out_[op->get<std::string>()] = 1.4826 * m;
      }
    }
  }
}

double CollectivePredictor::uncertainty_for(std::string_view op_label) const {
  const auto it = held_out_.find(op_label);
  if (it == held_out_.end()) return uncertainty_;
  return std::hypot(uncertainty_, it->second);
}

ProgramContext CollectivePredictor::context() const {
  return ProgramContext{*system_, plan_, version_, env_, rates_};
}

Bytes CollectivePredictor::nccl_bytes(CollectiveOp, Bytes size) const {
  // nccl-tests' size is NCCL's nBytes for every tuned collective (the all-gather/reduce-scatter
  // total is nRanks x count x type); for alltoall and sendrecv it is one rank's buffer.
  return size;
}

TunerChoice CollectivePredictor::choice(CollectiveOp op, Bytes size, Reduction r) const {
  return tuner_->choose(op, nccl_bytes(op, size), r);
}

StepProgram CollectivePredictor::program(CollectiveOp op, Bytes size, const TunerChoice& c, bool in_place) const {
  CollectiveShape shape;
  shape.op = op;
  shape.algorithm = c.algorithm;
  shape.protocol = c.protocol;
  shape.bytes = nccl_bytes(op, size);
  shape.channels = c.channels;
  shape.channel_bytes = c.channel_bytes;
  shape.threads = c.threads;
  shape.in_place = in_place;
  return build_program(context(), shape);
}

CollectivePrediction CollectivePredictor::finish(CollectivePrediction out, const NcclTestsMethod& method,
                                                 Duration host, std::optional<Duration> loop, bool launches) const {
  // -g N: one thread issues every GPU's call in turn, each also paying the group launch's switch to
  // its device (group.cc doLaunches); a call that launches nothing switches to nothing.
  const int g = std::max(1, method.gpus_per_thread);
  out.host_time = host * g;
  if (g > 1 && launches) out.host_time += rates_.host_group_comm * g;
  // -t T: the T threads of one process start their calls together, but each call holds the
  // process's launch path for part of its time (in a group of several communicators, with the
  // switch to each one's device and its launch round): the threads queue there, and the last one
  // done has waited for the other T - 1 threads' g serial parts.
  const int t = std::max(1, method.threads_per_process);
  if (t > 1 && launches) {
    const Duration serial = rates_.host_process_serial + (g > 1 ? rates_.host_group_comm : Duration{});
    out.host_time += serial * ((t - 1) * g);
  }
  // Back to back, a launch costs the program's loop time (ProgramTiming), its single pass otherwise.
  const Duration gpu = loop && method.iters > 1 ? *loop : out.gpu_time;
  const int iters = std::max(1, method.iters);
  if (method.graph_launches > 0) {
    // -G L (header): the graph replays the launches; the host issues L graph launches and waits once.
    const int graphs = method.graph_launches;
    out.host_time = (rates_.host_call * (graphs * g) + rates_.host_sync) / (static_cast<std::int64_t>(iters) * graphs);
    out.time = std::max(gpu, out.host_time);
  } else if (method.blocking > 0) {
    // -z (header): each call waits for its stream; nothing overlaps.
    out.time = out.host_time + out.gpu_time + rates_.host_sync;
  } else {
    // The host's side of the loop ends with the closing wait, once for its launches; while the GPU
    // is still busy the wait overlaps it.
    out.time = std::max(gpu, out.host_time + rates_.host_sync / iters);
  }
  const double sec = out.time.seconds();
  out.algbw_GBps = sec > 0 ? static_cast<double>(out.size.count()) / sec / 1e9 : 0.0;
  out.busbw_GBps = out.algbw_GBps * busbw_factor(out.op, system_->nranks());
  out.uncertainty = uncertainty_for(to_string(out.op));
  out.calibrated = !params_.any_uncalibrated();
  return out;
}

CollectivePrediction CollectivePredictor::predict(CollectiveOp op, Bytes size, const NcclTestsMethod& method) const {
  if (size.count() < 0) throw InputError("", "size", "expected a size >= 0 bytes");
  CollectivePrediction out;
  out.op = op;
  out.size = size;
  const int n = system_->nranks();
  const TunerChoice c = choice(op, size, method.reduction);
  out.algorithm = c.algorithm;
  out.protocol = c.protocol;
  out.channels = c.channels;
  out.notes = c.notes;
  if (size.count() == 0) return finish(out, method, rates_.host_call);
  if (n == 1) {
    // No communication (see the header): a local copy out of place, nothing in place.
    out.channels = 1;
    const bool scales = device_op(method.reduction) == DevRedOp::PRE_MUL_SUM &&
                        (op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::REDUCE_SCATTER || op == CollectiveOp::REDUCE);
    if (method.in_place && !scales) {
      // nccl-tests' send/recv is a group of four calls (ncclGroupStart, ncclSend, ncclRecv,
      // ncclGroupEnd); the group's end prepares the group, finds the send to itself in place and
      // drops it (enqueue.cc scheduleP2pTasksToPlan), so none launches: three empty calls and an
      // empty group end.
      const Duration host = op == CollectiveOp::SENDRECV ? rates_.host_empty_call * 3 + rates_.host_empty_group
                                                         : rates_.host_empty_call;
      return finish(out, method, host, std::nullopt, false);
    }
    const bool p2p = op == CollectiveOp::SENDRECV;
    const Duration fixed = p2p ? base_latency(context(), Algorithm::RING, Protocol::SIMPLE) : rates_.local_copy_overhead;
    out.gpu_time = fixed + transfer_time(size, rates_.local_copy);
    return finish(out, method, rates_.host_call);
  }
  const StepProgram p = program(op, size, c, method.in_place);
  if (p.p2p_protocol) out.protocol = *p.p2p_protocol;
  const ProgramTiming timing = evaluate_program(p);
  out.gpu_time = timing.total;
  return finish(out, method, rates_.host_call, timing.loop);
}

CollectivePrediction CollectivePredictor::predict_pair(Bytes size, int src, int dst, const NcclTestsMethod& method) const {
  const int n = system_->nranks();
  if (src < 0 || dst < 0 || src >= n || dst >= n || src == dst) {
    throw InputError("", "pair", "expected two different ranks below " + std::to_string(n));
  }
  if (size.count() < 0) throw InputError("", "size", "expected a size >= 0 bytes");
  CollectivePrediction out;
  out.op = CollectiveOp::SENDRECV;
  out.size = size;
  if (size.count() == 0) {
    out = finish(out, method, rates_.host_call);
    out.uncertainty = uncertainty_for("p2p");
    return out;
  }
  CollectiveShape shape;
  shape.op = CollectiveOp::SENDRECV;
  shape.bytes = size;
  shape.pair_src = src;
  shape.pair_dst = dst;
  const StepProgram p = build_program(context(), shape);
  const ProgramTiming timing = evaluate_program(p);
  out.gpu_time = timing.total;
  // Back to back the sender runs ahead of the receiver (StepProgram::kernels_run_ahead).
  out = finish(out, method, rates_.host_call, timing.loop);
  out.uncertainty = uncertainty_for("p2p");
  return out;
}

std::string CollectivePredictor::intra_transport() const {
  if (system_->gpus() < 2) return "";
  return system_->transport(0, 1).describe();
}

std::string CollectivePredictor::inter_transport() const {
  if (system_->nranks() <= system_->gpus() && system_->ranks_per_host() == system_->gpus()) return "";
  const int other = system_->ranks_per_host() % system_->nranks();
  return system_->transport(0, other).describe();
}

std::vector<std::string> CollectivePredictor::notes() const {
  std::vector<std::string> out = system_->notes();
  out.insert(out.end(), plan_.notes.begin(), plan_.notes.end());
  out.insert(out.end(), tuner_->notes().begin(), tuner_->notes().end());
  for (const auto& u : env_.unknown) out.push_back(version_.unmodelled_variable_note(u));
  out.insert(out.end(), env_.plugin_notes.begin(), env_.plugin_notes.end());
  return out;
}

}  // namespace clustersim::sim::nccl
