// Trace importers: every public LLM serving trace format as it is published, read by header
// name (never by position) and streamed, so memory is bounded by the Trace being built.
//  - azure: TIMESTAMP,ContextTokens,GeneratedTokens (2023: 7 fractional digits, CRLF; 2024:
//    +00:00 suffix, 0-6 fractional digits); arrivals relative to the first row.
//  - burstgpt: Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type (BurstGPT_3
//    adds Session ID and Elapsed time); 0 response tokens = a failed request, skipped unless
//    --keep-failed; --model-filter and --log-type select rows.
//  - mooncake: JSONL with timestamp (ms), input_length, output_length, hash_ids.
//  - vidur: arrived_at,num_prefill_tokens,num_decode_tokens, or the length-only form without
//    arrived_at.
//  - csv: any CSV, columns named by --col-arrival/--col-input/--col-output, --time-unit, and
//    optionally --col-priority (vLLM request priorities: integers, lower runs first) and
//    --col-lora (the LoRA adapter each request asks for, by name; empty, "0" or "base": none).
//  - servesim: the HDF5 trace of `servesim trace import` (traces/trace_store.hpp).
// Promises: a malformed row stops the import with FILE:LINE: field 'X': reason, or with
// skip_bad_rows is skipped and counted; rows_read always equals the rows kept plus every
// skipped count; an empty, header-only or unrecognised file is one Error.
#pragma once

#include <string>
#include <vector>

#include "traces/trace.hpp"

namespace servesim {

struct ImportOptions {
  std::string format;                              // "" = detect from the header or extension
  std::string col_arrival, col_input, col_output;  // csv
  std::string col_priority;                        // csv: optional
  std::string col_lora;                            // csv: optional, adapter names or ids
  std::string time_unit = "s";                     // csv: s | ms | us
  bool skip_bad_rows = false;
  bool keep_failed = false;     // burstgpt
  std::string model_filter;     // burstgpt: e.g. ChatGPT or GPT-4
  std::string log_type;         // burstgpt: conversation | api
  int32_t hash_block_size = 0;  // mooncake: tokens per hash id; 0 = 512

  // The options as flags, for the record kept with a trace.
  std::string describe() const;
};

const std::vector<std::string>& trace_formats();

// Reads any supported trace, its format given by OPT.format or read off the file (an HDF5
// signature, a JSON first line, or the CSV header's names). Reads the file once, front to back,
// so a pipe works for the text formats. Throws Error on bad input (see above).
Trace import_trace(const std::string& path, const ImportOptions& opt);

}  // namespace servesim
