#include "models/megatron_import.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "hardware/errors.hpp"
#include "models/megatron_arguments_data.hpp"

namespace clustersim::models {

namespace {

using Json = nlohmann::ordered_json;

struct ArgumentTable {
  std::map<std::string, MegatronArgument> args;
  std::string source;
};

const ArgumentTable& table() {
  static const ArgumentTable t = [] {
    ArgumentTable out;
    for (const auto& f : megatron_argument_files()) {
      const auto j = nlohmann::json::parse(f.text);
      const auto& src = j.at("source");
      out.source = "NVIDIA/Megatron-LM " + src.at("tag").get<std::string>() + " (commit " +
                   src.at("commit").get<std::string>().substr(0, 12) + ", " + src.at("file").get<std::string>() + ")";
      for (const auto& [name, e] : j.at("arguments").items()) {
        MegatronArgument a;
        a.kind = e.at("kind").get<std::string>();
        if (e.contains("choices")) {
          for (const auto& c : e.at("choices")) a.choices.push_back(c.is_string() ? c.get<std::string>() : c.dump());
        }
        out.args.emplace(name, std::move(a));
      }
    }
    return out;
  }();
  return t;
}

// Known arguments that change neither the step's time nor its memory here, by prefix.
bool inert(const std::string& name) {
  static const std::vector<std::string> prefixes = {
      "--lr", "--min-lr", "--weight-decay", "--start-weight-decay", "--end-weight-decay", "--clip-grad", "--adam-",
      "--sgd-momentum", "--init-method", "--log", "--tensorboard", "--wandb", "--save", "--load", "--no-load",
      "--no-save", "--data-", "--split", "--tokenizer-", "--vocab-file", "--merge-file", "--eval-", "--seed",
      "--exit-", "--ckpt-", "--distributed-backend", "--distributed-timeout", "--use-checkpoint", "--dataloader-type",
      "--mock-data", "--timing-log", "--use-mcore-models", "--transformer-impl", "--num-workers", "--train-data-path",
      "--valid-data-path", "--test-data-path", "--make-vocab-size-divisible-by", "--norm-epsilon",
      "--rotary-base", "--use-rotary-position-embeddings", "--no-position-embedding", "--attention-softmax-in-fp32",
      "--no-masked-softmax-fusion", "--no-bias-", "--bias-", "--use-flash-attn", "--untie-", "--no-rope-fusion",
      "--cross-entropy-loss-fusion", "--manual-gc", "--no-create-attention-mask", "--profile", "--async-save",
      "--no-async-tensor-model-parallel-allreduce", "--rerun-", "--moe-aux-loss-coeff", "--moe-router-load-balancing",
      "--moe-token-dispatcher-type", "--moe-z-loss", "--moe-router-dtype", "--moe-router-score-function",
      "--moe-router-topk-scaling-factor", "--moe-router-pre-softmax", "--moe-permute-fusion", "--moe-grouped-gemm",
      "--apply-query-key-layer-scaling", "--qk-layernorm", "--rope-scaling", "--use-rope-scaling", "--rotary-seq-len",
      "--swiglu", "--disable-bias-linear", "--add-qkv-bias", "--group-query-attention"};
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return name.rfind(p, 0) == 0; });
}

// The parsed arguments: name -> values (a flag has none, a list one or more).
class Parsed {
 public:
  Parsed(const std::vector<std::string>& args, const std::string& source, std::vector<std::string>& warnings)
      : source_(source) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string a = args[i];
      std::optional<std::string> inline_value;
      if (a.rfind("--", 0) != 0) {
        throw InputError(source, a, "expected a Megatron-LM argument (--name), got '" + a + "'");
      }
      if (const auto eq = a.find('='); eq != std::string::npos) {
        inline_value = a.substr(eq + 1);
        a = a.substr(0, eq);
      }
      std::vector<std::string> values;
      if (inline_value) values.push_back(*inline_value);
      auto take_values = [&](bool one) {
        while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
          values.push_back(args[++i]);
          if (one) break;
        }
      };
      const MegatronArgument* known = find_megatron_argument(a);
      if (known == nullptr) {
        if (!inline_value) take_values(false);
        warnings.push_back(source + ": " + a + " is not an argument of Megatron-LM's parser (" +
                           megatron_arguments_source() + "); ignored");
        continue;
      }
      if (known->kind == "flag") {
        if (inline_value) throw InputError(source, a, "is a flag and takes no value, got '" + *inline_value + "'");
      } else {
        if (!inline_value) take_values(known->kind != "list");
        if (values.empty()) throw InputError(source, a, "expected a value (" + known->kind + ")");
        for (const auto& v : values) check_kind(a, *known, v);
      }
      if (seen_.count(a)) warnings.push_back(source + ": " + a + " is given twice; the last one counts, as argparse does");
      seen_[a] = values;
    }
  }

  bool has(const std::string& name) {
    used_.insert(name);
    return seen_.count(name) > 0;
  }
  std::optional<std::int64_t> int_of(const std::string& name) {
    if (!has(name)) return std::nullopt;
    return std::stoll(seen_.at(name).front());
  }
  std::optional<double> float_of(const std::string& name) {
    if (!has(name)) return std::nullopt;
    return std::stod(seen_.at(name).front());
  }
  std::optional<std::string> str_of(const std::string& name) {
    if (!has(name)) return std::nullopt;
    return seen_.at(name).front();
  }
  [[noreturn]] void fail(const std::string& name, const std::string& message) const {
    throw InputError(source_, name, message);
  }
  // Known arguments nobody read: warned about unless inert.
  void warn_unused(std::vector<std::string>& warnings) const {
    for (const auto& [name, _] : seen_) {
      if (used_.count(name) || inert(name)) continue;
      warnings.push_back(source_ + ": " + name + " is a Megatron-LM argument that clustersim does not model; ignored");
    }
  }

 private:
  std::string source_;
  std::map<std::string, std::vector<std::string>> seen_;
  std::set<std::string> used_;

  void check_kind(const std::string& name, const MegatronArgument& a, const std::string& v) const {
    if (a.kind == "int") {
      std::int64_t x = 0;
      const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
      if (r.ec != std::errc() || r.ptr != v.data() + v.size()) {
        throw InputError(source_, name, "expected an integer, got '" + v + "'");
      }
    } else if (a.kind == "float") {
      std::size_t used = 0;
      double x = 0;
      try {
        x = std::stod(v, &used);
      } catch (...) {
        used = 0;
      }
      if (used != v.size() || !std::isfinite(x)) throw InputError(source_, name, "expected a number, got '" + v + "'");
    }
    if (!a.choices.empty() && std::find(a.choices.begin(), a.choices.end(), v) == a.choices.end()) {
      std::string list;
      for (const auto& c : a.choices) list += (list.empty() ? "" : ", ") + c;
      throw InputError(source_, name, "expected one of " + list + ", got '" + v + "'");
    }
  }
};

std::int64_t positive(Parsed& p, const std::string& name, std::optional<std::int64_t> v) {
  if (v && *v < 1) p.fail(name, "expected a positive integer, got " + std::to_string(*v));
  return v.value_or(1);
}

Json inline_model(Parsed& p, const MegatronImportOptions& o, std::vector<std::string>& warnings) {
  const auto layers = p.int_of("--num-layers");
  const auto hidden = p.int_of("--hidden-size");
  const auto heads = p.int_of("--num-attention-heads");
  if (!layers || !hidden || !heads) {
    p.fail(!layers ? "--num-layers" : !hidden ? "--hidden-size" : "--num-attention-heads",
           "missing: the model's shape needs --num-layers, --hidden-size and --num-attention-heads (or give the "
           "import --model-preset NAME or --hf-config PATH)");
  }
  if (p.has("--multi-latent-attention")) {
    p.fail("--multi-latent-attention", "an MLA model needs its Hugging Face config: give the import --hf-config PATH "
                                       "or --model-preset deepseek-v3");
  }
  const std::int64_t ffn = p.int_of("--ffn-hidden-size").value_or(4 * *hidden);  // Megatron's default 4h
  std::optional<std::int64_t> vocab = p.int_of("--vocab-size");
  if (!vocab) vocab = o.vocab_size;
  if (!vocab) {
    p.fail("--vocab-size", "missing: the vocabulary comes from the tokenizer; give --vocab-size in the arguments or "
                           "the import's --vocab-size");
  }
  const bool swiglu = p.has("--swiglu");
  const bool rms = p.str_of("--normalization").value_or("LayerNorm") == "RMSNorm";
  const std::string pos = p.str_of("--position-embedding-type").value_or("learned_absolute");
  const bool no_bias = p.has("--disable-bias-linear");
  const bool qkv_bias = p.has("--add-qkv-bias");
  const bool untie = p.has("--untie-embeddings-and-output-weights");
  const double attn_dropout = p.float_of("--attention-dropout").value_or(0.1);
  const double hidden_dropout = p.float_of("--hidden-dropout").value_or(0.1);
  const std::int64_t max_pos = p.int_of("--max-position-embeddings").value_or(p.int_of("--seq-length").value_or(0));
  std::int64_t kv = *heads;
  if (p.has("--group-query-attention")) kv = p.int_of("--num-query-groups").value_or(1);
  else if (p.has("--num-query-groups")) warnings.push_back(o.source + ": --num-query-groups without --group-query-attention is ignored by Megatron");
  const auto experts = p.int_of("--num-experts");
  Json m;
  m["name"] = o.name.empty() ? "megatron-import" : o.name;
  if (swiglu && rms && pos == "rope") {
    m["model_type"] = experts ? "mixtral" : (no_bias && qkv_bias) ? "qwen2" : "llama";
    m["hidden_size"] = *hidden;
    m["intermediate_size"] = ffn;
    m["num_hidden_layers"] = *layers;
    m["num_attention_heads"] = *heads;
    m["num_key_value_heads"] = kv;
    if (auto kvc = p.int_of("--kv-channels")) m["head_dim"] = *kvc;
    m["vocab_size"] = *vocab;
    m["max_position_embeddings"] = max_pos;
    m["tie_word_embeddings"] = !untie;
    m["attention_dropout"] = attn_dropout;
    if (m["model_type"] == "llama") {
      m["attention_bias"] = !no_bias;
      m["mlp_bias"] = !no_bias;
    } else if (!no_bias) {
      warnings.push_back(o.source + ": biases on every linear (no --disable-bias-linear) are not modelled for " +
                         m["model_type"].get<std::string>());
    }
    if (hidden_dropout > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", hidden_dropout);
      warnings.push_back(o.source + ": --hidden-dropout " + buf + (p.has("--hidden-dropout") ? "" : " (Megatron's default)") +
                         ": the llama family has no hidden dropout; its masks are not modelled");
    }
    if (experts) {
      m["num_local_experts"] = *experts;
      m["num_experts_per_tok"] = p.int_of("--moe-router-topk").value_or(2);
      if (auto w = p.int_of("--moe-ffn-hidden-size"); w && *w != ffn) {
        p.fail("--moe-ffn-hidden-size", "an expert width other than --ffn-hidden-size needs the model's Hugging Face "
                                         "config (--hf-config PATH)");
      }
      if (p.has("--moe-shared-expert-intermediate-size") || p.has("--moe-layer-freq")) {
        p.fail(p.has("--moe-layer-freq") ? "--moe-layer-freq" : "--moe-shared-expert-intermediate-size",
               "shared experts and dense layers among MoE layers need the model's Hugging Face config (--hf-config PATH)");
      }
    }
    return m;
  }
  if (!swiglu && !rms && !experts) {
    m["model_type"] = pos == "rope" ? "gpt_neox" : "gpt2";
    if (pos == "rope") {
      m["hidden_size"] = *hidden;
      m["intermediate_size"] = ffn;
      m["num_hidden_layers"] = *layers;
      m["num_attention_heads"] = *heads;
      m["vocab_size"] = *vocab;
      m["max_position_embeddings"] = max_pos;
      m["rotary_pct"] = p.float_of("--rotary-percent").value_or(1.0);
      m["tie_word_embeddings"] = !untie;
      m["attention_dropout"] = attn_dropout;
      m["hidden_dropout"] = hidden_dropout;
    } else {
      m["n_embd"] = *hidden;
      m["n_inner"] = ffn;
      m["n_layer"] = *layers;
      m["n_head"] = *heads;
      m["vocab_size"] = *vocab;
      m["n_positions"] = max_pos;
      m["attn_pdrop"] = attn_dropout;
      m["resid_pdrop"] = hidden_dropout;
      m["embd_pdrop"] = hidden_dropout;
      if (untie) warnings.push_back(o.source + ": --untie-embeddings-and-output-weights: gpt2 ties them; modelled tied");
    }
    if (kv != *heads) p.fail("--num-query-groups", "grouped-query attention without --swiglu/RMSNorm/rope has no "
                                                   "supported family; give --hf-config PATH");
    if (no_bias) warnings.push_back(o.source + ": --disable-bias-linear: " + m["model_type"].get<std::string>() +
                                    " keeps its biases; modelled with them");
    return m;
  }
  p.fail(swiglu ? "--swiglu" : "--normalization",
         "this combination of --swiglu, --normalization and --position-embedding-type matches no supported model "
         "family (llama: --swiglu, RMSNorm, rope; gpt2: GeLU, LayerNorm, learned_absolute); give --hf-config PATH");
}

}  // namespace

const MegatronArgument* find_megatron_argument(const std::string& name) {
  const auto& t = table().args;
  const auto it = t.find(name);
  return it == t.end() ? nullptr : &it->second;
}

std::string megatron_arguments_source() { return table().source; }

std::vector<std::string> split_launch_arguments(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (!in_word && c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '\'' || c == '"') {
      const std::size_t end = text.find(c, i + 1);
      if (end == std::string::npos) throw InputError("", "", "an unclosed quote in the arguments");
      cur += text.substr(i + 1, end - i - 1);
      in_word = true;
      i = end;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
      continue;
    }
    cur += c;
    in_word = true;
  }
  if (in_word) out.push_back(cur);
  // A bash array (NAME=( ... )) as clustersim's export writes it.
  std::vector<std::string> args;
  for (const auto& w : out) {
    if (w == ")" || (w.size() > 2 && w.substr(w.size() - 2) == "=(" && w.rfind("--", 0) != 0)) continue;
    args.push_back(w);
  }
  return args;
}

MegatronImport import_megatron_arguments(const std::vector<std::string>& args, const MegatronImportOptions& o) {
  MegatronImport r;
  Parsed p(args, o.source, r.warnings);
  const std::int64_t tp = positive(p, "--tensor-model-parallel-size", p.int_of("--tensor-model-parallel-size"));
  const std::int64_t pp = positive(p, "--pipeline-model-parallel-size", p.int_of("--pipeline-model-parallel-size"));
  const std::int64_t cp = positive(p, "--context-parallel-size", p.int_of("--context-parallel-size"));
  const std::int64_t ep = positive(p, "--expert-model-parallel-size", p.int_of("--expert-model-parallel-size"));
  const std::int64_t world = static_cast<std::int64_t>(o.nodes) * o.gpus_per_node;
  if (world % (tp * pp * cp) != 0) {
    p.fail("--tensor-model-parallel-size",
           "tensor x pipeline x context = " + std::to_string(tp * pp * cp) + " does not divide the cluster's " +
               std::to_string(world) + " GPUs (--nodes x --gpus-per-node)");
  }
  const std::int64_t dp = world / (tp * pp * cp);

  Json s;
  s["schema_version"] = 1;
  s["name"] = o.name.empty() ? "megatron-import" : o.name;
  // The model.
  if (o.model_preset) {
    s["model"] = {{"preset", *o.model_preset}};
  } else if (o.hf_config) {
    s["model"] = {{"hf_config", *o.hf_config}};
  } else {
    s["model"] = inline_model(p, o, r.warnings);
  }
  const std::int64_t num_layers = p.int_of("--num-layers").value_or(0);

  // Training.
  Json t;
  const auto seq = p.int_of("--seq-length");
  if (!seq) p.fail("--seq-length", "missing: the sequence length is needed");
  t["seq_len"] = *seq;
  const std::int64_t mbs = positive(p, "--micro-batch-size", p.int_of("--micro-batch-size"));
  t["micro_batch_size"] = mbs;
  // Megatron's default global batch is micro-batch x data parallel.
  t["global_batch_size"] = p.int_of("--global-batch-size").value_or(mbs * dp);
  if (p.has("--fp8-format")) t["precision"] = "fp8";
  else if (p.has("--bf16")) t["precision"] = "bf16";
  else if (p.has("--fp16")) t["precision"] = "fp16";
  else t["precision"] = "fp32";
  t["grad_reduce_dtype"] = p.has("--grad-reduce-in-bf16") ? "bf16" : "fp32";
  if (auto opt = p.str_of("--optimizer")) {
    if (*opt != "adam" && *opt != "sgd") p.fail("--optimizer", "expected adam or sgd (the optimizers clustersim models), got '" + *opt + "'");
    t["optimizer"] = *opt == "sgd" ? "sgd" : "adamw";
  }
  std::string granularity = p.str_of("--recompute-granularity").value_or("");
  if (granularity.empty() && p.has("--recompute-activations")) granularity = "selective";
  t["activation_checkpointing"] = granularity.empty() ? "none" : granularity;
  const auto method = p.str_of("--recompute-method");
  const auto rlayers = p.int_of("--recompute-num-layers");
  if (granularity == "full") {
    // Megatron-Core requires both beside "full" (transformer_config.py).
    if (!method) p.fail("--recompute-method", "missing: Megatron-Core needs it beside --recompute-granularity full");
    if (!rlayers) p.fail("--recompute-num-layers", "missing: Megatron-Core needs it beside --recompute-granularity full");
    t["recompute_method"] = *method;
    t["recompute_num_layers"] = positive(p, "--recompute-num-layers", rlayers);
  } else if (method || rlayers) {
    p.fail(method ? "--recompute-method" : "--recompute-num-layers", "applies to --recompute-granularity full only");
  }
  if (auto backend = p.str_of("--attention-backend"); backend && *backend == "unfused") t["attention"] = "unfused";
  t["implementation"] = "fused";
  const auto iters = p.int_of("--train-iters");
  const auto samples = p.int_of("--train-samples");
  if (iters) {
    t["tokens"] = static_cast<double>(*iters) * static_cast<double>(t["global_batch_size"].get<std::int64_t>()) *
                  static_cast<double>(*seq);
  } else if (samples) {
    t["tokens"] = static_cast<double>(*samples) * static_cast<double>(*seq);
  }
  s["training"] = t;

  // Parallelism.
  Json par;
  par["framework"] = "megatron";
  par["data"] = dp;
  par["tensor"] = tp;
  par["pipeline"] = pp;
  par["context"] = cp;
  par["expert"] = ep;
  par["sequence_parallel"] = p.has("--sequence-parallel");
  std::int64_t vp = 1;
  if (auto per = p.int_of("--num-layers-per-virtual-pipeline-stage")) {
    if (*per < 1 || num_layers == 0 || num_layers % (pp * *per) != 0) {
      p.fail("--num-layers-per-virtual-pipeline-stage",
             "expected a divisor of --num-layers / --pipeline-model-parallel-size, got " + std::to_string(*per));
    }
    vp = num_layers / (pp * *per);
  }
  if (auto v = p.int_of("--num-virtual-stages-per-pipeline-rank")) vp = positive(p, "--num-virtual-stages-per-pipeline-rank", v);
  if (pp > 1) par["pipeline_schedule"] = vp > 1 ? "interleaved_1f1b" : "1f1b";
  if (vp > 1) par["virtual_stages"] = vp;
  const auto first = p.int_of("--decoder-first-pipeline-num-layers");
  const auto last = p.int_of("--decoder-last-pipeline-num-layers");
  if (first || last) {
    par["uneven_pipeline"] = true;
    r.warnings.push_back(o.source + ": --decoder-first/last-pipeline-num-layers: clustersim gives the first L mod pp "
                                    "stages one layer more instead; the per-stage layer counts may be ordered differently");
  } else if (num_layers > 0 && num_layers % (pp * vp) != 0) {
    p.fail("--num-layers", std::to_string(num_layers) + " layers do not split evenly over " + std::to_string(pp * vp) +
                               " pipeline chunks and no --decoder-first/last-pipeline-num-layers is given");
  }
  if (p.has("--use-tp-pp-dp-mapping")) par["rank_order"] = "tp-cp-ep-pp-dp";
  // Megatron's defaults: all off.
  const bool distopt = p.has("--use-distributed-optimizer");
  par["megatron"] = {{"distributed_optimizer", distopt},
                     {"overlap_grad_reduce", p.has("--overlap-grad-reduce")},
                     {"overlap_param_gather", p.has("--overlap-param-gather")},
                     {"tp_comm_overlap", p.has("--tp-comm-overlap")}};
  if (p.has("--optimizer-cpu-offload")) {
    p.fail("--optimizer-cpu-offload", "Megatron's optimizer CPU offload is not modelled");
  }
  if (p.has("--use-torch-fsdp2") || p.has("--use-megatron-fsdp")) {
    p.fail(p.has("--use-torch-fsdp2") ? "--use-torch-fsdp2" : "--use-megatron-fsdp",
           "Megatron's FSDP is not modelled; import the layout without it or describe it as framework \"pytorch\"");
  }
  s["parallelism"] = par;

  // Cluster.
  s["cluster"] = {{"system", o.system}, {"nodes", o.nodes}, {"gpus_per_node", o.gpus_per_node}};

  // What the model reads without an inline model: note the arguments it overrides.
  if (o.model_preset || o.hf_config) {
    for (const char* k : {"--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
                          "--num-query-groups", "--vocab-size", "--num-experts"}) {
      if (p.has(k)) {
        r.warnings.push_back(o.source + ": " + k + " is taken from the " +
                             (o.model_preset ? "preset " + *o.model_preset : "config " + *o.hf_config) +
                             ", not from the arguments");
      }
    }
  }
  for (const char* k : {"--swiglu", "--normalization", "--position-embedding-type", "--untie-embeddings-and-output-weights",
                        "--disable-bias-linear", "--add-qkv-bias", "--attention-dropout", "--hidden-dropout",
                        "--max-position-embeddings", "--kv-channels", "--moe-router-topk", "--moe-ffn-hidden-size",
                        "--rotary-percent", "--group-query-attention"}) {
    (void)p.has(k);  // read by the inline model, or decided by the preset
  }
  p.warn_unused(r.warnings);
  r.scenario = s;
  return r;
}

}  // namespace clustersim::models
