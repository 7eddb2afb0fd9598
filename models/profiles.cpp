#include "models/profiles.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "models/gpu.hpp"
#include "util/csv_file.hpp"
#include "util/error.hpp"
#include "util/lookup.hpp"
#include "util/text_input.hpp"

namespace servesim {
namespace fs = std::filesystem;

void Curve::add(double x, double y) {
  raw_.emplace_back(x, y);
}

void Curve::finish() {
  std::sort(raw_.begin(), raw_.end());
  x_.clear();
  y_.clear();
  for (size_t i = 0; i < raw_.size();) {
    size_t j = i;
    double sum = 0;
    while (j < raw_.size() && raw_[j].first == raw_[i].first)
      sum += raw_[j++].second;
    x_.push_back(raw_[i].first);
    y_.push_back(sum / double(j - i));
    i = j;
  }
  raw_.clear();
  raw_.shrink_to_fit();
  // The growth rate beyond the last point: a least-squares line through the last quarter of the
  // points (at least 2, at most 16), never negative: one noisy segment must not set it.
  end_slope_ = 0;
  const size_t n = x_.size();
  const size_t k = std::min<size_t>(n, std::clamp<size_t>(n / 4, 2, 16));
  if (k >= 2) {
    double mx = 0, my = 0;
    for (size_t i = n - k; i < n; ++i) {
      mx += x_[i];
      my += y_[i];
    }
    mx /= double(k);
    my /= double(k);
    double sxy = 0, sxx = 0;
    for (size_t i = n - k; i < n; ++i) {
      sxy += (x_[i] - mx) * (y_[i] - my);
      sxx += (x_[i] - mx) * (x_[i] - mx);
    }
    if (sxx > 0) end_slope_ = std::max(0.0, sxy / sxx);
  }
}

double Curve::at(double x) const {
  if (x <= x_.front()) return y_.front();
  if (x >= x_.back()) return y_.back() + end_slope_ * (x - x_.back());
  const size_t hi = size_t(std::upper_bound(x_.begin(), x_.end(), x) - x_.begin());
  const size_t lo = hi - 1;
  const double f = (x - x_[lo]) / (x_[hi] - x_[lo]);
  return y_[lo] + f * (y_[hi] - y_[lo]);
}

const MlpProfile* ProfileSet::find_mlp(const ProfileShape& s) const {
  for (const MlpProfile& m : mlp) {
    if (m.shape.n_head == s.n_head && m.shape.n_kv_head == s.n_kv_head &&
        m.shape.n_embd == s.n_embd && m.shape.n_expanded_embd == s.n_expanded_embd) {
      return &m;
    }
  }
  return nullptr;
}

const std::vector<std::string>& gemm_ops() {
  static const std::vector<std::string> ops = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj",
                                               "mlp_down_proj"};
  return ops;
}

const std::vector<std::string>& elementwise_ops() {
  static const std::vector<std::string> ops = {"input_layernorm", "post_attention_layernorm",
                                               "attn_rope", "mlp_act", "add"};
  return ops;
}

namespace {

ProfileShape read_shape(const CsvFile& f, const char* heads, const char* kv_heads) {
  ProfileShape s;
  s.n_head = int(f.integer(f.col(heads), 1, 1 << 12));
  s.n_kv_head = int(f.integer(f.col(kv_heads), 1, s.n_head));
  s.n_embd = int(f.integer(f.col("n_embd"), 1, 1 << 16));
  if (s.n_embd % s.n_head != 0 || s.n_head % s.n_kv_head != 0) {
    throw Error(f.path(), f.line(), "n_embd", "heads must divide n_embd, KV heads the heads");
  }
  const int expanded = f.col("n_expanded_embd", false);
  if (expanded >= 0) s.n_expanded_embd = int(f.integer(expanded, 1, 1 << 20));
  return s;
}

}  // namespace

MlpProfile read_mlp_profile(const std::string& path) {
  CsvFile f(path);
  MlpProfile p;
  p.file = path;
  const int c_tokens = f.col("num_tokens"), c_tp = f.col("num_tensor_parallel_workers");
  std::vector<std::pair<std::string, int>> ops;
  for (const auto* list : {&gemm_ops(), &elementwise_ops()}) {
    for (const std::string& op : *list)
      ops.emplace_back(op, f.col("time_stats." + op + ".median"));
  }
  bool first = true;
  while (f.next()) {
    const ProfileShape s = read_shape(f, "n_head", "n_kv_head");
    if (first) {
      p.shape = s;
      first = false;
    } else if (s.n_head != p.shape.n_head || s.n_kv_head != p.shape.n_kv_head ||
               s.n_embd != p.shape.n_embd || s.n_expanded_embd != p.shape.n_expanded_embd) {
      throw Error(path, f.line(), "n_embd", "one mlp.csv must hold one model shape");
    }
    const int tp = int(f.integer(c_tp, 1, 64));
    if (s.n_head % tp != 0)
      throw Error(path, f.line(), "num_tensor_parallel_workers", "must divide n_head");
    const double tokens = double(f.integer(c_tokens, 1, 1 << 24));
    for (const auto& [op, c] : ops)
      p.ops[tp][op].add(tokens, f.measured_ms(c));
  }
  if (first) throw Error(path, 1, "", "no data rows");
  for (auto& [tp, by_op] : p.ops) {
    for (auto& [op, curve] : by_op)
      curve.finish();
  }
  return p;
}

AttentionProfile read_attention_profile(const std::string& path) {
  CsvFile f(path);
  AttentionProfile p;
  p.file = path;
  const int c_prefill = f.col("is_prefill"), c_chunk = f.col("prefill_chunk_size"),
            c_kv = f.col("kv_cache_size"), c_batch = f.col("batch_size"),
            c_tp = f.col("num_tensor_parallel_workers"), c_len = f.col("max_model_len", false),
            c_pre_t = f.col("time_stats.attn_prefill.median"),
            c_dec_t = f.col("time_stats.attn_decode.median");
  bool first = true;
  while (f.next()) {
    const ProfileShape s = read_shape(f, "n_q_head", "n_kv_head");
    const int tp = int(f.integer(c_tp, 1, 64));
    if (s.n_head % tp != 0)
      throw Error(path, f.line(), "num_tensor_parallel_workers", "must divide n_q_head");
    if (first) {
      p.shape = s;
      p.tp = tp;
      first = false;
    } else if (s.n_head != p.shape.n_head || s.n_kv_head != p.shape.n_kv_head ||
               s.n_embd != p.shape.n_embd || tp != p.tp) {
      throw Error(path, f.line(), "n_q_head",
                  "one attention profile must hold one shape and TP degree");
    }
    if (c_len >= 0 && f.has_number(c_len)) p.max_model_len = int(f.integer(c_len, 1, 1 << 24));
    const bool prefill = f.text(c_prefill) == "True" || f.text(c_prefill) == "true";
    const double kv = double(f.integer(c_kv, 0, 1 << 24));
    if (prefill) {
      p.prefill[int(f.integer(c_chunk, 1, 1 << 20))].add(kv, f.measured_ms(c_pre_t));
    } else {
      p.decode[int(f.integer(c_batch, 1, 1 << 16))].add(kv, f.measured_ms(c_dec_t));
    }
  }
  if (p.prefill.empty() || p.decode.empty()) {
    throw Error(path, 0, "is_prefill", "needs both prefill and decode rows");
  }
  for (auto* m : {&p.prefill, &p.decode}) {
    for (auto& [k, curve] : *m)
      curve.finish();
  }
  return p;
}

AllReduceProfile read_allreduce_profile(const std::string& path) {
  CsvFile f(path);
  AllReduceProfile p;
  p.file = path;
  const int c_time = f.col("time_stats.all_reduce.median"), c_workers = f.col("num_workers"),
            c_size = f.col("size"), c_devices = f.col("devices_per_node", false),
            c_collective = f.col("collective", false);
  // Vidur's pairwise-NVLink nodes join their GPUs in NVLink pairs: a group of more crosses PCIe
  // between the pairs (the H100 file's 4-GPU rows reach 49 GB/s of bus bandwidth against 191
  // for 2), which no catalogue GPU's interconnect figure describes. Only the pairs are NVLink.
  const bool nvlink_pairs = path.find("pairwise_nvlink") != std::string::npos;
  while (f.next()) {
    if (c_collective >= 0 && f.text(c_collective) != "all_reduce") continue;
    if (!f.has_number(c_time)) continue;  // all-gather rows of a mixed file
    const int workers = int(f.integer(c_workers, 1, 1024));
    // Single-node collectives only: all the GPUs of the group on one NVLink/NVSwitch node.
    if (c_devices >= 0 && f.integer(c_devices, 1, 1024) != workers) continue;
    if (nvlink_pairs && workers > 2) continue;
    p.by_workers[workers].add(f.size_bytes(c_size), f.measured_ms(c_time));
  }
  if (p.by_workers.empty()) throw Error(path, 0, "num_workers", "no single-node all-reduce rows");
  for (auto& [w, curve] : p.by_workers)
    curve.finish();
  return p;
}

CpuProfile read_cpu_profile(const std::string& path) {
  CsvFile f(path);
  CpuProfile p;
  p.file = path;
  const int c_batch = f.col("batch_size");
  std::vector<int> parts;
  for (const char* k : {"schedule", "sampler_e2e", "prepare_inputs_e2e", "process_model_outputs"}) {
    parts.push_back(f.col(std::string(k) + "_median"));
  }
  bool any = false;
  while (f.next()) {
    double sum = 0;
    for (int c : parts)
      sum += f.measured_ms(c);
    p.per_iteration.add(double(f.integer(c_batch, 1, 1 << 16)), sum);
    any = true;
  }
  if (!any) throw Error(path, 1, "", "no data rows");
  p.per_iteration.finish();
  return p;
}

std::string gpu_family(const std::string& gpu) {
  std::string f = lowercase(gpu);
  return f.substr(0, f.find_first_of("-_ "));
}

std::string profile_path_family(const std::string& relative_path) {
  std::set<std::string> families;
  for (const GpuSpec& g : gpu_catalogue())
    families.insert(gpu_family(g.name));
  const fs::path p(relative_path);
  for (const fs::path& part : p.parent_path()) {
    const std::string name = lowercase(part.string());
    const std::string lead =
        name.substr(0, name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789"));
    if (families.count(lead) > 0) return lead;
  }
  return "";
}

ProfileSet load_profiles(const std::string& dir, const std::string& gpu) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir, 0, "", "not a directory of profiles");
  ProfileSet set;
  set.dir = dir;
  const std::string family = gpu.empty() ? "" : gpu_family(gpu);
  std::set<std::string> other_families;
  std::vector<std::string> mlp, attention, allreduce, cpu;
  fs::recursive_directory_iterator it(dir,
                                      fs::directory_options::skip_permission_denied |
                                          fs::directory_options::follow_directory_symlink,
                                      ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::directory_entry& e = *it;
    std::error_code file_ec;
    if (!e.is_regular_file(file_ec)) continue;
    const std::string name = e.path().filename().string();
    if (name != "mlp.csv" && name != "attention.csv" && name != "all_reduce.csv" &&
        name != "cpu_overheads.csv") {
      continue;
    }
    const std::string of = profile_path_family(fs::relative(e.path(), dir, file_ec).string());
    if (!family.empty() && !of.empty() && of != family) {
      other_families.insert(of);
      continue;
    }
    if (name == "mlp.csv") mlp.push_back(e.path().string());
    if (name == "attention.csv") attention.push_back(e.path().string());
    if (name == "all_reduce.csv") allreduce.push_back(e.path().string());
    if (name == "cpu_overheads.csv") cpu.push_back(e.path().string());
  }
  if (ec) throw Error(dir, 0, "", "cannot list: " + ec.message());
  for (auto* v : {&mlp, &attention, &allreduce, &cpu})
    std::sort(v->begin(), v->end());
  for (const std::string& p : mlp)
    set.mlp.push_back(read_mlp_profile(p));
  if (!attention.empty()) set.attention = read_attention_profile(attention.front());
  if (!allreduce.empty()) {
    auto dgx = std::find_if(allreduce.begin(), allreduce.end(), [](const std::string& p) {
      return p.find("dgx") != std::string::npos;
    });
    set.allreduce = read_allreduce_profile(dgx != allreduce.end() ? *dgx : allreduce.front());
  }
  if (!cpu.empty()) set.cpu = read_cpu_profile(cpu.front());
  if (set.mlp.empty() && !set.attention && !set.allreduce && !set.cpu && !other_families.empty()) {
    std::string found;
    for (const std::string& f : other_families)
      found += (found.empty() ? "" : ", ") + f;
    throw Error(
        dir, 0, "",
        "no profile of " + gpu + " (" + family + ") under this directory, only of " + found);
  }
  if (set.mlp.empty() && !set.attention && !set.allreduce && !set.cpu) {
    throw Error(dir, 0, "",
                "no Vidur profile (mlp.csv, attention.csv, all_reduce.csv, "
                "cpu_overheads.csv) under this directory");
  }
  return set;
}

std::vector<StepLogRow> read_step_log(const std::string& path) {
  CsvFile f(path);
  const int c_pt = f.col("prefill_tokens"), c_dt = f.col("decode_tokens"),
            c_pc = f.col("prefill_context_tokens"), c_dc = f.col("decode_context_tokens"),
            c_bs = f.col("batch_size", false), c_ms = f.col("measured_ms");
  std::vector<StepLogRow> rows;
  auto count = [&](int c) { return f.integer(c, 0, INT32_MAX); };
  while (f.next()) {
    StepLogRow r;
    r.prefill_tokens = count(c_pt);
    r.decode_tokens = count(c_dt);
    r.prefill_context_tokens = count(c_pc);
    r.decode_context_tokens = count(c_dc);
    if (c_bs >= 0) r.batch_size = count(c_bs);
    r.measured_ms = f.measured_ms(c_ms);
    if (r.decode_tokens > (1 << 20) || r.batch_size > (1 << 20)) {
      throw Error(path, f.line(), "decode_tokens", "more than 2^20 sequences in one step");
    }
    if (r.prefill_tokens + r.decode_tokens == 0) {
      throw Error(path, f.line(), "prefill_tokens", "a step computes at least one token");
    }
    rows.push_back(r);
  }
  if (rows.empty()) throw Error(path, 1, "", "no data rows");
  return rows;
}

}  // namespace servesim
