// The servesim trace file: a Trace in HDF5, compact and self-describing (layout in
// docs/manual/traces.md). Datasets are 1-D columns, chunked and deflate-compressed with the shuffle
// filter:
//   /arrival_s float64, /input_tokens int32, /output_tokens int32, and when present
//   /hash_offsets uint64 (n + 1), /hash_ids uint64, /session_id int64, /request_class uint8,
//   /priority int32, and token spans as /span_offsets uint64 (n + 1), /span_stream uint64,
//   /span_stream_pos int32, /span_prompt_pos int32, /span_tokens int32 (one entry a span) and
//   /output_continues uint8 (one a request);
// attributes on / record the format version, source file, source format, import options and
// transforms, whether the trace is timed, the hash block size, the class names and every row
// count (rows_read, skipped_bad, ...).
// Promises: read_trace_h5(write_trace_h5(t)) == t column for column; a missing, truncated,
// corrupt or foreign HDF5 file is one Error naming the file, never a crash.
#pragma once

#include <string>

#include "traces/trace.hpp"

namespace servesim {

void write_trace_h5(const std::string& path, const Trace& t);
Trace read_trace_h5(const std::string& path);

}  // namespace servesim
