// A small directory of Vidur operator profiles for llama-2-7b's shape (mlp, attention,
// all-reduce and CPU overheads at TP1 and TP2), written by hand: for the profile readers, the
// table model and the flags that name a profile directory.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include "trace_fixtures.hpp"

namespace servesim::test {

inline const char* kOps[] = {"emb",         "input_layernorm", "attn_pre_proj",
                             "attn_rope",   "attn_post_proj",  "post_attention_layernorm",
                             "mlp_up_proj", "mlp_act",         "mlp_down_proj",
                             "add"};

// An mlp.csv row in Vidur's layout: every op's min/max/mean/median/std, then the shape.
inline std::string mlp_header() {
  std::string h;
  for (const char* op : kOps) {
    for (const char* s : {"min", "max", "mean", "median", "std"}) {
      h.append("time_stats.").append(op).append(".").append(s).append(",");
    }
  }
  return h +
         "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,"
         "num_tensor_parallel_workers\n";
}
// Op i takes (i + 1) x SCALE ms at this row.
inline std::string mlp_row(int tokens, int tp, double scale) {
  std::string r;
  char buf[64];
  for (int i = 0; i < 10; ++i) {
    std::snprintf(buf, sizeof buf, "%g", (i + 1) * scale);
    for (int k = 0; k < 5; ++k)
      r.append(k == 3 ? buf : "0").append(",");
  }
  std::snprintf(buf, sizeof buf, "32,32,4096,11008,32000,True,%d,%d\n", tokens, tp);
  return r + buf;
}

// A small profile directory for llama-2-7b's shape at TP1 and TP2, one per test (NAME), since
// ctest runs tests in parallel.
inline std::string fixture_profiles(const std::string& name) {
  namespace fs = std::filesystem;
  const std::string sub = "servesim_profiles_" + name;
  const fs::path dir = fs::temp_directory_path() / sub;
  fs::create_directories(dir / "compute" / "m");
  fs::create_directories(dir / "legacy");
  fixture("../" + sub + "/compute/m/mlp.csv",
          mlp_header() + mlp_row(1, 1, 0.01) + mlp_row(8, 1, 0.02) + mlp_row(64, 1, 0.04) +
              mlp_row(64, 1, 0.06) /* a duplicate: averaged */ + mlp_row(1, 2, 0.005));
  fixture("../" + sub + "/legacy/attention.csv",
          "time_stats.attn_prefill.median,time_stats.attn_decode.median,n_embd,n_q_head,"
          "n_kv_head,block_size,num_tensor_parallel_workers,max_model_len,batch_size,"
          "prefill_chunk_size,kv_cache_size,is_prefill\n"
          "0.10,,8192,64,8,16,2,4096,1,128,0,True\n"
          "0.30,,8192,64,8,16,2,4096,1,128,1024,True\n"
          "0.50,,8192,64,8,16,2,4096,1,256,0,True\n"
          "0.90,,8192,64,8,16,2,4096,1,256,1024,True\n"
          ",0.02,8192,64,8,16,2,4096,1,0,512,False\n"
          ",0.04,8192,64,8,16,2,4096,1,0,1024,False\n"
          ",0.03,8192,64,8,16,2,4096,2,0,512,False\n"
          ",0.07,8192,64,8,16,2,4096,2,0,1024,False\n");
  fixture("../" + sub + "/legacy/all_reduce.csv",
          ",time_stats.all_reduce.median,num_workers,size,collective,devices_per_node\n"
          "0,0.010,2,1000,all_reduce,2\n1,0.020,2,3000,all_reduce,2\n"
          "2,0.500,2,3000,all_reduce,1\n");  // cross-node: ignored
  fixture("../" + sub + "/legacy/cpu_overheads.csv",
          ",schedule_median,sampler_e2e_median,prepare_inputs_e2e_median,"
          "process_model_outputs_median,batch_size\n"
          "0,0.1,0.2,0.3,0.4,8\n1,0.1,0.2,0.3,1.4,16\n");
  return dir.string();
}

}  // namespace servesim::test
