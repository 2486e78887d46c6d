#include "calibrate/harness/subrun_plan.hpp"

#include <algorithm>

namespace clustersim::harness {

std::string nccl_algo_name(const std::string& algo) {
  if (algo == "ring") return "Ring";
  if (algo == "tree") return "Tree";
  if (algo == "pat") return "PAT";
  if (algo == "nvls") return "NVLS";
  if (algo == "nvls_tree") return "NVLSTree";
  if (algo == "collnet_direct") return "CollnetDirect";
  if (algo == "collnet_chain") return "CollnetChain";
  return algo;
}

std::string nccl_proto_name(const std::string& proto) {
  if (proto == "ll") return "LL";
  if (proto == "ll128") return "LL128";
  if (proto == "simple") return "Simple";
  return proto;
}

bool algo_supports(const std::string& algo, const std::string& op) {
  if (algo == "auto") return true;
  if (op == "alltoall" || op == "sendrecv") return false;
  if (algo == "ring") return true;
  if (algo == "tree" || algo == "nvls_tree" || algo == "collnet_chain") return op == "all_reduce";
  if (algo == "pat") return op == "all_gather" || op == "reduce_scatter";
  if (algo == "nvls" || algo == "collnet_direct") {
    return op == "all_reduce" || op == "all_gather" || op == "reduce_scatter";
  }
  return false;
}

namespace {

SubRun collective_run(const Options& opt, const std::string& algo, const std::string& proto, int channels) {
  SubRun r;
  r.section = Section::COLLECTIVES;
  r.algo = algo;
  r.proto = proto;
  r.channels = channels;
  const bool forced = algo != "auto" || proto != "auto" || channels > 0;
  if (!forced) {
    r.label = "auto";
    r.ops = opt.ops;
    r.max_bytes = opt.max_bytes;
    r.iters = opt.iters;
    r.warmup_iters = opt.warmup_iters;
  } else {
    if (channels > 0) {
      r.label = "channels=" + std::to_string(channels);
      r.env.emplace_back("NCCL_MIN_NCHANNELS", std::to_string(channels));
      r.env.emplace_back("NCCL_MAX_NCHANNELS", std::to_string(channels));
    } else {
      r.label = "algo=" + algo + " proto=" + proto;
      if (algo != "auto") r.env.emplace_back("NCCL_ALGO", nccl_algo_name(algo));
      if (proto != "auto") r.env.emplace_back("NCCL_PROTO", nccl_proto_name(proto));
    }
    for (const auto& op : opt.forced_ops) {
      if (algo_supports(algo, op)) {
        r.ops.push_back(op);
      } else {
        r.skipped_ops.emplace_back(op, "NCCL implements " + op + " without " + algo);
      }
    }
    r.max_bytes = std::min(opt.max_bytes, opt.forced_max_bytes);
    r.iters = opt.forced_iters;
    r.warmup_iters = opt.forced_warmup_iters;
  }
  r.min_bytes = std::min(opt.min_bytes, r.max_bytes);
  r.step_factor = opt.step_factor;
  if (algo == "nvls" || algo == "nvls_tree") {
    r.skip_reason = "NVLink SHARP stays off in this harness (NCCL_NVLS_ENABLE=0 in every process)";
  } else if (r.ops.empty()) {
    r.skip_reason = "no op of --forced-ops runs with algorithm " + algo;
  }
  return r;
}

}  // namespace

std::vector<SubRun> plan_subruns(const Options& opt, int ndevices) {
  std::vector<SubRun> plan;
  for (const Section s : opt.sections) {
    switch (s) {
      case Section::ENVIRONMENT: {
        SubRun r;
        r.section = s;
        r.label = "environment";
        r.one_per_gpu = false;
        plan.push_back(r);
        break;
      }
      case Section::COLLECTIVES: {
        if (opt.run_auto) plan.push_back(collective_run(opt, "auto", "auto", 0));
        const std::vector<std::string> protos = opt.protos.empty() ? std::vector<std::string>{"auto"} : opt.protos;
        if (!opt.algos.empty()) {
          for (const auto& a : opt.algos) {
            for (const auto& p : protos) plan.push_back(collective_run(opt, a, p, 0));
          }
        } else if (!opt.protos.empty()) {
          for (const auto& p : opt.protos) plan.push_back(collective_run(opt, "auto", p, 0));
        }
        for (const int c : opt.channels) plan.push_back(collective_run(opt, "auto", "auto", c));
        break;
      }
      case Section::P2P: {
        for (const auto& mode : opt.p2p_modes) {
          SubRun r;
          r.section = s;
          r.p2p_mode = mode;
          r.label = mode;
          r.min_bytes = opt.p2p_min_bytes;
          r.max_bytes = mode == "shm" ? std::min(opt.p2p_max_bytes, opt.shm_max_bytes) : opt.p2p_max_bytes;
          r.min_bytes = std::min(r.min_bytes, r.max_bytes);
          r.step_factor = opt.p2p_step_factor;
          r.iters = opt.p2p_iters;
          r.warmup_iters = 2;
          if (mode == "write") r.env.emplace_back("NCCL_P2P_READ_ENABLE", "0");
          if (mode == "read") r.env.emplace_back("NCCL_P2P_READ_ENABLE", "1");
          if (mode == "shm") r.env.emplace_back("NCCL_P2P_DISABLE", "1");
          if (mode == "memcpy") r.one_per_gpu = false;
          if (ndevices < 2) r.skip_reason = "point-to-point tests need at least 2 GPUs";
          plan.push_back(r);
        }
        break;
      }
      case Section::GEMM:
      case Section::ATTENTION:
      case Section::MEMORY:
      case Section::HOST: {
        SubRun r;
        r.section = s;
        r.label = section_name(s);
        plan.push_back(r);
        break;
      }
      case Section::SELFTEST: {
        SubRun r;
        r.section = s;
        r.label = "selftest-" + opt.selftest_mode;
        r.uses_gpu = false;
        plan.push_back(r);
        break;
      }
      case Section::CPU_ADAM: {
        SubRun r;
        r.section = s;
        r.label = "cpu_adam";
        r.one_per_gpu = false;
        r.uses_gpu = false;
        plan.push_back(r);
        break;
      }
    }
  }
  return plan;
}

}  // namespace clustersim::harness
