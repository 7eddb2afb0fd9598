// The roofline's default parameters against the measured A100 operator timings in
// ../shared/profiles (Vidur's profiles). Reads ../shared: skipped, with a message, where the
// folder is absent. Set SERVESIM_SHARED to point elsewhere.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "models/roofline.hpp"
#include "shared_data.hpp"

using namespace servesim;
namespace fs = std::filesystem;

namespace {

fs::path shared_dir() {
  return servesim::test::shared_path();
}

// A CSV read by header name (no quoting: Vidur's files have none).
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t col(const std::string& name) const {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return i;
    }
    throw std::runtime_error("no column " + name);
  }
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');)
    out.push_back(f);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

Csv read_csv(const fs::path& p) {
  std::ifstream f(p);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  Csv c;
  std::string line;
  std::getline(f, line);
  c.header = split(line);
  while (std::getline(f, line))
    c.rows.push_back(split(line));
  return c;
}

double num(const std::vector<std::string>& row, size_t i) {
  return std::stod(row[i]);
}

struct Mape {
  double sum = 0, worst = 0;
  int n = 0;
  void add(double predicted, double measured) {
    const double e = std::abs(predicted - measured) / measured;
    sum += e;
    worst = std::max(worst, e);
    ++n;
  }
  double mean() const { return n ? sum / n : 0; }
};

bool have_shared() {
  return servesim::test::have_shared("profiles");
}

}  // namespace

TEST_CASE("shared profiles: GEMM and element-wise defaults match Vidur's A100 mlp.csv",
          "[shared][cost]") {
  if (!have_shared()) return;
  const fs::path base =
      shared_dir() / "profiles/vidur_7d47513/data/profiling/compute/a100/meta-llama";
  const std::pair<const char*, const char*> models[] = {{"llama-2-7b", "Llama-2-7b-hf"},
                                                        {"llama-3-8b", "Meta-Llama-3-8B"},
                                                        {"llama-2-70b", "Llama-2-70b-hf"}};
  Mape linear, elementwise;
  for (const auto& [name, dir] : models) {
    const Csv csv = read_csv(base / dir / "mlp.csv");
    const ModelSpec m = find_model(name);
    for (const auto& row : csv.rows) {
      const int tokens = int(num(row, csv.col("num_tokens")));
      const int tp = int(num(row, csv.col("num_tensor_parallel_workers")));
      // Both ends of the roofline: weight-bound (<= 8 tokens) and compute-bound (>= 2048).
      if (!(tokens <= 8 || (tokens >= 2048 && tokens <= 4096))) continue;
      const RooflineCostModel model(find_gpu("a100-80g"), m, tp);
      const SeqShape shape{tokens, 0, true, false};
      const StepCost c = model.cost(std::span(&shape, 1));
      double gemm = 0, ew = 0;
      for (const char* op : {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"}) {
        gemm += num(row, csv.col(std::string("time_stats.") + op + ".median"));
      }
      for (const char* op :
           {"input_layernorm", "post_attention_layernorm", "attn_rope", "mlp_act", "add"}) {
        ew += num(row, csv.col(std::string("time_stats.") + op + ".median"));
      }
      linear.add(c.linear_s / m.num_layers * 1e3, gemm);
      if (tp == 1 || tokens >= 2048) elementwise.add(c.elementwise_s / m.num_layers * 1e3, ew);
    }
  }
  std::cout << "shared profiles: GEMMs MAPE " << linear.mean() * 100 << "% (worst "
            << linear.worst * 100 << "%, " << linear.n << " points); element-wise MAPE "
            << elementwise.mean() * 100 << "% (worst " << elementwise.worst * 100 << "%)\n";
  CHECK(linear.n > 100);
  CHECK(linear.mean() < 0.05);
  CHECK(elementwise.mean() < 0.10);
}

TEST_CASE("shared profiles: attention defaults match Vidur's legacy A100 attention.csv",
          "[shared][cost]") {
  if (!have_shared()) return;
  const Csv csv =
      read_csv(shared_dir() / "profiles/vidur_legacy_e2d00e9/data/profiling/a100/attention.csv");
  // The profiled shape (8192 hidden, 64 query heads, 8 KV heads, TP2) is Llama-2-70B's.
  const ModelSpec m = find_model("llama-2-70b");
  const RooflineCostModel model(find_gpu("a100-80g"), m, 2);
  Mape decode, prefill;
  for (const auto& row : csv.rows) {
    const bool is_prefill = row[csv.col("is_prefill")] == "True";
    const int kv = int(num(row, csv.col("kv_cache_size")));
    if (is_prefill) {
      const int chunk = int(num(row, csv.col("prefill_chunk_size")));
      if (chunk < 512 || kv < 1024) continue;  // compute-bound rows
      const SeqShape shape{chunk, kv, true, false};
      prefill.add(model.cost(std::span(&shape, 1)).attention_s / m.num_layers * 1e3,
                  num(row, csv.col("time_stats.attn_prefill.median")));
    } else {
      const int batch = int(num(row, csv.col("batch_size")));
      if (batch < 32 || kv < 1024) continue;  // bandwidth-bound rows
      std::vector<SeqShape> shapes(size_t(batch), SeqShape{1, kv, false, true});
      decode.add(model.cost(shapes).attention_s / m.num_layers * 1e3,
                 num(row, csv.col("time_stats.attn_decode.median")));
    }
  }
  std::cout << "shared profiles: decode attention MAPE " << decode.mean() * 100 << "% (" << decode.n
            << " points), prefill attention MAPE " << prefill.mean() * 100 << "% (" << prefill.n
            << " points)\n";
  CHECK(decode.n > 100);
  CHECK(prefill.n > 100);
  CHECK(decode.mean() < 0.14);
  CHECK(prefill.mean() < 0.13);
}

TEST_CASE("shared profiles: per-step CPU overhead matches Vidur's cpu_overheads.csv",
          "[shared][cost]") {
  if (!have_shared()) return;
  const Csv csv = read_csv(shared_dir() /
                           "profiles/vidur_legacy_e2d00e9/data/profiling/a100/cpu_overheads.csv");
  const RooflineParams p;  // the uncalibrated baseline's CPU line is read off this file
  Mape cpu;
  for (const auto& row : csv.rows) {
    double measured = 0;
    for (const char* k :
         {"schedule", "sampler_e2e", "prepare_inputs_e2e", "process_model_outputs"}) {
      measured += num(row, csv.col(std::string(k) + "_median"));
    }
    const double batch = num(row, csv.col("batch_size"));
    cpu.add((p.engine.cpu_s + p.engine.cpu_s_per_seq * batch) * 1e3, measured);
  }
  std::cout << "shared profiles: CPU overhead MAPE " << cpu.mean() * 100 << "% (worst "
            << cpu.worst * 100 << "%)\n";
  CHECK(cpu.n >= 10);
  CHECK(cpu.worst < 0.08);
}
