// Measured operator profiles in Vidur's public format (microsoft/vidur data/profiling), the
// measurements servesim's cost models are calibrated and checked on, and a generic step log a
// user can collect from a vLLM deployment. Files are read by header name; times are ms, per
// layer, per GPU, and the median of repeated runs is used, as Vidur does.
//  - mlp.csv: every non-attention op of one layer vs num_tokens, per tensor-parallel degree;
//  - attention.csv: attn_prefill (one chunk after kv_cache_size cached tokens) and attn_decode
//    (batch_size sequences of kv_cache_size tokens) for one attention shape;
//  - all_reduce.csv: all-reduce time vs message bytes and number of GPUs;
//  - cpu_overheads.csv: per-iteration CPU work vs batch size.
// A Curve interpolates piecewise-linearly between measured points and, beyond them, grows at the
// least-squares slope of its last points (op times grow linearly in tokens, context and bytes at
// the large end).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace servesim {

// y(x) from measured points; duplicates of an x are averaged.
class Curve {
 public:
  void add(double x, double y);
  void finish();  // sorts and merges duplicates; call once after the last add
  bool empty() const { return x_.empty(); }
  double min_x() const { return x_.front(); }
  double max_x() const { return x_.back(); }
  const std::vector<double>& xs() const { return x_; }
  const std::vector<double>& ys() const { return y_; }
  // Linear interpolation inside [min_x, max_x]; below, the first point; above, the end slope
  // (never decreasing).
  double at(double x) const;

 private:
  std::vector<double> x_, y_;
  std::vector<std::pair<double, double>> raw_;
  double end_slope_ = 0;
};

// The shape a profile was measured for, as Vidur names it.
struct ProfileShape {
  int n_head = 0, n_kv_head = 0, n_embd = 0, n_expanded_embd = 0;
};

// mlp.csv: per tensor-parallel degree, per op, time vs num_tokens.
struct MlpProfile {
  std::string file;
  ProfileShape shape;
  std::map<int, std::map<std::string, Curve>> ops;  // tp -> op -> curve
};

// attention.csv (Vidur's legacy attention profile): one shape at one TP degree.
struct AttentionProfile {
  std::string file;
  ProfileShape shape;
  int tp = 1;
  std::map<int, Curve> prefill;  // chunk size -> time vs kv_cache_size
  std::map<int, Curve> decode;   // batch size -> time vs kv_cache_size
  int max_model_len = 0;
};

struct AllReduceProfile {
  std::string file;
  std::map<int, Curve> by_workers;  // GPUs -> time vs message bytes (single node)
};

struct CpuProfile {
  std::string file;
  Curve per_iteration;  // schedule + sampler + prepare_inputs + process_model_outputs medians
};

struct ProfileSet {
  std::string dir;
  std::vector<MlpProfile> mlp;
  std::optional<AttentionProfile> attention;
  std::optional<AllReduceProfile> allreduce;
  std::optional<CpuProfile> cpu;

  // The mlp profile measured for a model of this shape, or nullptr.
  const MlpProfile* find_mlp(const ProfileShape& shape) const;
};

// The linear (GEMM) and element-wise ops of mlp.csv, as servesim's cost classes group them.
const std::vector<std::string>& gemm_ops();
const std::vector<std::string>& elementwise_ops();

MlpProfile read_mlp_profile(const std::string& path);
AttentionProfile read_attention_profile(const std::string& path);
AllReduceProfile read_allreduce_profile(const std::string& path);
CpuProfile read_cpu_profile(const std::string& path);

// Every profile file under DIR (searched recursively). Where several all_reduce.csv exist, one
// measured on an NVSwitch (DGX) node is preferred. Throws Error if DIR has none.
// With GPU (a catalogue name, e.g. "h100-sxm"), only the files of that GPU's family are read:
// a file whose path under DIR has a directory named for a catalogue GPU family ("a100",
// "h100_pairwise_nvlink") belongs to that family; a path naming none belongs to every GPU.
// Error when DIR holds profiles of other GPUs only.
ProfileSet load_profiles(const std::string& dir, const std::string& gpu = "");

// The family of a catalogue GPU name ("h100" for "h100-sxm"), and the family a profile path
// names under its root ("" when none).
std::string gpu_family(const std::string& gpu);
std::string profile_path_family(const std::string& relative_path);

// A step measured on a real deployment: what it ran and how long it took.
struct StepLogRow {
  int64_t prefill_tokens = 0, decode_tokens = 0;
  int64_t prefill_context_tokens = 0, decode_context_tokens = 0;  // summed over sequences
  int64_t batch_size = 0;  // sequences; 0 when the log has no such column
  double measured_ms = 0;
};

// CSV with prefill_tokens, decode_tokens, prefill_context_tokens, decode_context_tokens,
// [batch_size,] measured_ms. Throws Error(file, line, field, reason) on a bad row.
std::vector<StepLogRow> read_step_log(const std::string& path);

}  // namespace servesim
