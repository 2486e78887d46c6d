#include "models/training_validation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hardware/errors.hpp"
#include "hardware/json_reader.hpp"
#include "hardware/statistics.hpp"
#include "models/step_flops.hpp"

namespace clustersim::models {

namespace {

struct RowSettings {
  std::int64_t micro_batch_size = 1;
  int virtual_stages = 1;
  bool overlap_grad_reduce = true;
};

struct SetSpec {
  std::string name, file, description, provenance, system, precision, grad_reduce_dtype, checkpointing, attention,
      flops, measured_column;
  int gpus_per_node = 8;
  std::int64_t seq_len = 2048, vocab = 51200;
  bool tied = true, sequence_parallel = false, distributed_optimizer = false, overlap_param_gather = false,
       tp_comm_overlap = false;
  std::map<std::string, RowSettings> rows;
  std::string where;  // for errors
};

std::vector<SetSpec> read_sets(const std::string& text) {
  const std::string file = "training_sets.json";
  const JsonDocument doc = parse_json_text(text, file);
  std::vector<SetSpec> out;
  doc.root().read_object([&](ObjectReader& top) {
    top.at("schema_version").as_int({.min = 1, .max = 1});
    (void)top.maybe("note");
    for (const ValueReader& v : top.at("sets").as_array(1)) {
      v.read_object([&](ObjectReader& o) {
        SetSpec s;
        s.where = v.pointer();
        s.name = o.at("name").as_string();
        s.file = o.at("file").as_string();
        s.description = o.at("description").as_string();
        s.provenance = o.at("provenance").as_string();
        s.system = o.at("system").as_string();
        s.gpus_per_node = static_cast<int>(o.at("gpus_per_node").as_int({.min = 1, .max = 64}));
        s.seq_len = o.at("seq_len").as_int({.min = 1, .max = 1 << 24});
        s.vocab = o.at("vocab_size").as_int({.min = 1, .max = 1 << 24});
        s.tied = o.at("tied_embeddings").as_bool();
        s.precision = o.at("precision").as_choice({"bf16", "fp16", "fp8", "fp32"});
        s.grad_reduce_dtype = o.at("grad_reduce_dtype").as_choice({"bf16", "fp16", "fp32"});
        s.checkpointing = o.at("activation_checkpointing").as_choice({"none", "selective", "full"});
        s.attention = o.at("attention").as_choice({"flash", "unfused"});
        s.sequence_parallel = o.at("sequence_parallel").as_bool();
        s.distributed_optimizer = o.at("distributed_optimizer").as_bool();
        s.overlap_param_gather = o.at("overlap_param_gather").as_bool();
        s.tp_comm_overlap = o.at("tp_comm_overlap").as_bool();
        s.flops = o.at("flops").as_choice({"megatron_eq3", "model"});
        s.measured_column = o.at("measured_column").as_string();
        o.at("rows").read_object([&](ObjectReader& rows) {
          for (const auto& key : rows.keys()) {
            rows.at(key).read_object([&](ObjectReader& r) {
              RowSettings rs;
              rs.micro_batch_size = r.at("micro_batch_size").as_int({.min = 1, .max = 1 << 20});
              rs.virtual_stages = static_cast<int>(r.at("virtual_stages").as_int({.min = 1, .max = 1024}));
              rs.overlap_grad_reduce = r.at("overlap_grad_reduce").as_bool();
              s.rows[key] = rs;
            });
          }
        });
        out.push_back(std::move(s));
      });
    }
  });
  return out;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::vector<TrainingValidationSet> run_training_validation(const std::string& sets_json,
                                                           const std::function<std::string(const std::string&)>& read,
                                                           const hardware::Catalog& catalog,
                                                           const std::string& hopper_calibration) {
  std::vector<TrainingValidationSet> out;
  StepSimulator simulator(catalog);
  for (const SetSpec& spec : read_sets(sets_json)) {
    TrainingValidationSet set;
    set.name = spec.name;
    set.description = spec.description;
    set.provenance = spec.provenance;
    std::istringstream csv(read(spec.file));
    std::string line;
    std::getline(csv, line);
    const std::vector<std::string> header = split(line, ',');
    auto col = [&](const std::string& name) -> std::size_t {
      const auto it = std::find(header.begin(), header.end(), name);
      if (it == header.end()) throw InputError(spec.file, "header", "expected a column '" + name + "'");
      return static_cast<std::size_t>(it - header.begin());
    };
    const std::size_t c_params = col("params_b"), c_heads = col("heads"), c_hidden = col("hidden"),
                      c_layers = col("layers"), c_tp = col("tp"), c_pp = col("pp"), c_gpus = col("gpus"),
                      c_batch = col("global_batch"), c_meas = col(spec.measured_column);
    int line_no = 1;
    std::vector<double> errors;
    while (std::getline(csv, line)) {
      ++line_no;
      if (line.empty() || line == "\r") continue;
      const std::vector<std::string> f = split(line, ',');
      if (f.size() < header.size()) throw InputError(spec.file, "line " + std::to_string(line_no), "too few columns");
      const std::string key = f[c_params];
      const auto rs = spec.rows.find(key);
      if (rs == spec.rows.end()) {
        throw InputError("training_sets.json", spec.where + "/rows",
                         "no run settings for row params_b = " + key + " of " + spec.file);
      }
      const std::int64_t heads = std::stoll(f[c_heads]), hidden = std::stoll(f[c_hidden]),
                         layers = std::stoll(f[c_layers]), gpus = std::stoll(f[c_gpus]),
                         batch = std::stoll(f[c_batch]);
      const int tp = std::stoi(f[c_tp]), pp = std::stoi(f[c_pp]);
      const int dp = static_cast<int>(gpus / (static_cast<std::int64_t>(tp) * pp));
      const double measured = std::stod(f[c_meas]);
      const RowSettings& r = rs->second;
      nlohmann::json j;
      j["schema_version"] = 1;
      j["name"] = spec.name + " " + key + "B";
      j["model"] = {{"name", "gpt-" + key + "b"},
                    {"model_type", "gpt2"},
                    {"n_embd", hidden},
                    {"n_layer", layers},
                    {"n_head", heads},
                    {"n_positions", spec.seq_len},
                    {"vocab_size", spec.vocab},
                    {"tie_word_embeddings", spec.tied}};
      j["training"] = {{"seq_len", spec.seq_len},
                       {"micro_batch_size", r.micro_batch_size},
                       {"global_batch_size", batch},
                       {"precision", spec.precision},
                       {"grad_reduce_dtype", spec.grad_reduce_dtype},
                       {"optimizer", "adam"},
                       {"activation_checkpointing", spec.checkpointing},
                       {"attention", spec.attention}};
      j["parallelism"] = {{"framework", "megatron"},
                          {"data", dp},
                          {"tensor", tp},
                          {"pipeline", pp},
                          {"sequence_parallel", spec.sequence_parallel && tp > 1},
                          {"pipeline_schedule", r.virtual_stages > 1 ? "interleaved_1f1b" : "1f1b"},
                          {"virtual_stages", r.virtual_stages},
                          {"megatron",
                           {{"distributed_optimizer", spec.distributed_optimizer},
                            {"overlap_grad_reduce", r.overlap_grad_reduce},
                            {"overlap_param_gather", spec.overlap_param_gather},
                            {"tp_comm_overlap", spec.tp_comm_overlap && tp > 1}}}};
      j["cluster"] = {{"system", spec.system}, {"nodes", gpus / spec.gpus_per_node}, {"gpus_per_node", spec.gpus_per_node}};
      j["calibration"] = "default";
      const std::string name = spec.file + " row " + key;
      Scenario sc = read_scenario(parse_json_text(j.dump(), name), ".");
      if (!hopper_calibration.empty() && hardware::resolve_node(catalog, spec.system).gpu->architecture == "hopper") {
        sc.calibration = hopper_calibration;
      }
      TrainingValidationRow row;
      row.label = key + "B TP" + std::to_string(tp) + " PP" + std::to_string(pp) + " DP" + std::to_string(dp) + " (" +
                  std::to_string(gpus) + " GPUs)";
      row.measured_tflops = measured;
      const TransformerConfig model = resolve_model(sc.model);
      const double F = spec.flops == "megatron_eq3"
                           ? megatron_eq3_flops(static_cast<double>(batch), static_cast<double>(spec.seq_len),
                                                static_cast<double>(layers), static_cast<double>(hidden),
                                                static_cast<double>(spec.vocab))
                           : step_flops(model, sc.training,
                                        {.attention = AttentionCounting::FULL_SQUARE, .include_recompute = false});
      row.estimate = simulator.estimate(sc, Fidelity::EVENT);
      const StepEstimate fast = simulator.estimate(sc, Fidelity::FAST);
      row.step_s = row.estimate.step_time_s;
      row.predicted_tflops = F / (row.step_s * static_cast<double>(gpus)) / 1e12;
      row.fast_tflops = F / (fast.step_time_s * static_cast<double>(gpus)) / 1e12;
      row.measured_step_s = F / (measured * 1e12 * static_cast<double>(gpus));
      row.error = row.predicted_tflops / measured - 1;
      errors.push_back(std::abs(row.error));
      set.rows.push_back(std::move(row));
    }
    set.median_abs_error = median(errors);
    set.worst_abs_error = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
    out.push_back(std::move(set));
  }
  (void)fmt;
  return out;
}

ProbeValidationSet run_probe_validation(const std::string& text, const hardware::Catalog& catalog,
                                        const std::string& calibration) {
  const std::string file = "training_fsdp2_probes.json";
  const JsonDocument doc = parse_json_text(text, file);
  ProbeValidationSet set;
  struct Probe {
    std::string label;
    double step_s = 0, peak = 0;
    nlohmann::json scenario;
    bool in_sample = false;
  };
  std::vector<Probe> probes;
  doc.root().read_object([&](ObjectReader& top) {
    top.at("schema_version").as_int({.min = 1, .max = 1});
    (void)top.maybe("note");
    set.name = top.at("name").as_string();
    set.description = top.at("description").as_string();
    set.provenance = top.at("provenance").as_string();
    for (const ValueReader& v : top.at("probes").as_array(1)) {
      v.read_object([&](ObjectReader& o) {
        Probe p;
        p.label = o.at("label").as_string();
        p.step_s = o.at("step_time_s").as_number({.min = 0, .max = 1e6, .min_exclusive = true});
        p.peak = o.at("peak_allocated_bytes").as_number({.min = 0, .max = 1e15, .min_exclusive = true});
        (void)o.maybe("step_times_s");
        (void)o.maybe("measured");
        if (auto f = o.maybe("in_sample")) p.in_sample = f->as_bool();
        p.scenario = o.at("scenario").raw();
        probes.push_back(std::move(p));
      });
    }
  });
  StepSimulator simulator(catalog);
  std::vector<double> step_errors, memory_errors;
  for (const Probe& p : probes) {
    Scenario sc = read_scenario(parse_json_text(p.scenario.dump(), file + " probe " + p.label), ".");
    if (!calibration.empty()) sc.calibration = calibration;
    ProbeValidationRow row;
    row.label = p.label;
    row.measured_step_s = p.step_s;
    row.measured_peak_bytes = p.peak;
    row.in_sample = p.in_sample;
    row.estimate = simulator.estimate(sc, Fidelity::EVENT);
    row.fast_step_s = simulator.estimate(sc, Fidelity::FAST).step_time_s;
    row.predicted_step_s = row.estimate.step_time_s;
    row.step_error = row.predicted_step_s / p.step_s - 1;
    row.predicted_peak_bytes = row.estimate.memory.allocated.as_double();
    row.memory_error = row.predicted_peak_bytes / p.peak - 1;
    step_errors.push_back(std::abs(row.step_error));
    memory_errors.push_back(std::abs(row.memory_error));
    set.rows.push_back(std::move(row));
  }
  set.median_step_error = median(step_errors);
  set.worst_step_error = step_errors.empty() ? 0 : *std::max_element(step_errors.begin(), step_errors.end());
  set.median_memory_error = median(memory_errors);
  set.worst_memory_error = memory_errors.empty() ? 0 : *std::max_element(memory_errors.begin(), memory_errors.end());
  return set;
}

std::map<std::string, TrainingThreshold> load_training_thresholds(const std::string& text, const std::string& file) {
  std::map<std::string, TrainingThreshold> out;
  const JsonDocument doc = parse_json_text(text, file);
  doc.root().read_object([&](ObjectReader& top) {
    top.at("schema_version").as_int({.min = 1, .max = 1});
    (void)top.maybe("note");
    top.at("sets").read_object([&](ObjectReader& sets) {
      for (const auto& key : sets.keys()) {
        sets.at(key).read_object([&](ObjectReader& o) {
          TrainingThreshold t;
          t.median_abs_error = o.at("median_abs_error").as_number({.min = 0, .max = 10});
          t.worst_abs_error = o.at("worst_abs_error").as_number({.min = 0, .max = 10});
          out[key] = t;
        });
      }
    });
  });
  return out;
}

}  // namespace clustersim::models
