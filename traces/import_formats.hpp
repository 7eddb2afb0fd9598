// The importer of each trace format (internal to traces/import*.cpp; import_trace() in
// traces/import.hpp picks one and gives it the reader past the first line). Each appends the
// file's requests to T, arrivals relative to the first kept row, and counts every row it reads
// (see the formats and promises in traces/import.hpp).
#pragma once

#include <string>
#include <string_view>

#include "traces/import.hpp"
#include "traces/import_rows.hpp"
#include "traces/trace.hpp"
#include "util/text_input.hpp"

namespace servesim::import_detail {

// CSV formats: IN is past the header H.
void import_azure(const std::string& path, LineReader& in, const Header& h, Rows& rows, Trace& t);
void import_burstgpt(const std::string& path, const ImportOptions& opt, LineReader& in,
                     const Header& h, Rows& rows, Trace& t);
void import_vidur(const std::string& path, LineReader& in, const Header& h, Rows& rows, Trace& t);
void import_csv(const std::string& path, const ImportOptions& opt, LineReader& in, const Header& h,
                Rows& rows, Trace& t);

// JSONL: FIRST_LINE is the first non-blank line, the one IN returned last.
void import_mooncake(const std::string& path, const ImportOptions& opt, LineReader& in,
                     std::string_view first_line, Rows& rows, Trace& t);

}  // namespace servesim::import_detail
