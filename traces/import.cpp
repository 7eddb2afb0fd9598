// import_trace(): detects a trace's format and hands the file to that format's importer
// (traces/import_formats.hpp); also the options' record and the list of formats.
#include "traces/import.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <filesystem>

#include "traces/import_formats.hpp"
#include "traces/trace_store.hpp"
#include "util/error.hpp"
#include "util/text_input.hpp"

namespace servesim {

using import_detail::blank;
using import_detail::Header;
using import_detail::import_azure;
using import_detail::import_burstgpt;
using import_detail::import_csv;
using import_detail::import_mooncake;
using import_detail::import_vidur;
using import_detail::parse_header;
using import_detail::Rows;

const std::vector<std::string>& trace_formats() {
  static const std::vector<std::string> formats = {"azure", "burstgpt", "mooncake",
                                                   "vidur", "csv",      "servesim"};
  return formats;
}

std::string ImportOptions::describe() const {
  std::string s;
  auto add = [&s](const char* path, const std::string& value) {
    if (!value.empty())
      s.append(s.empty() ? "" : " ").append(spell_field(path, true)).append(" ").append(value);
  };
  auto add_switch = [&s](const char* path) {
    s.append(s.empty() ? "" : " ").append(spell_field(path, true));
  };
  add(field::kTraceFormat, format);
  add(field::kColArrival, col_arrival);
  add(field::kColInput, col_input);
  add(field::kColOutput, col_output);
  add(field::kColPriority, col_priority);
  add(field::kColLora, col_lora);
  if (time_unit != "s") add(field::kTimeUnit, time_unit);
  if (skip_bad_rows) add_switch(field::kSkipBadRows);
  if (keep_failed) add_switch(field::kKeepFailed);
  add(field::kModelFilter, model_filter);
  add(field::kLogType, log_type);
  if (hash_block_size > 0) add(field::kHashBlockSize, std::to_string(hash_block_size));
  return s;
}

namespace {

bool is_hdf5(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;  // pipes: text formats only
  H5::Exception::dontPrint();
  try {
    return H5::H5File::isHdf5(path.c_str());  // also finds a signature after a user block
  } catch (const H5::Exception&) {
    return false;
  }
}

std::string detect_csv(const std::string& path, const Header& h, const ImportOptions& opt) {
  if (h.has("TIMESTAMP") && h.has("ContextTokens") && h.has("GeneratedTokens")) return "azure";
  if (h.has("Timestamp") && h.has("Request tokens") && h.has("Response tokens")) return "burstgpt";
  if (h.has("num_prefill_tokens") && h.has("num_decode_tokens")) return "vidur";
  if (!opt.col_input.empty()) return "csv";
  // A ServeGen client (chunk-N-trace.csv: window_start_s,rate,cv,Weibull|Gamma|,arg1,arg2, no
  // header) holds per-window statistics, not requests: it is a generator's input (issue 25).
  const std::string name = std::filesystem::path(path).filename().string();
  const bool chunk = name.rfind("chunk-", 0) == 0 && name.size() > 10 &&
                     name.compare(name.size() - 10, 10, "-trace.csv") == 0;
  if (chunk || h.text.find(",Weibull,") != std::string::npos ||
      h.text.find(",Gamma,") != std::string::npos) {
    throw Error(path, 1, "",
                "is a ServeGen client (per-window arrival statistics, not requests): replay it "
                "with " +
                    field::ref(field::kDatasetName) + " servegen " + field::ref(field::kServegen) +
                    " " + path + " (the chunk-N-dataset.json beside it gives the lengths)");
  }
  throw Error(path, 1, "",
              "cannot tell the trace format from the header " + h.text +
                  " (known: azure, burstgpt, mooncake, vidur, servesim; for any other CSV give " +
                  field::ref(field::kTraceFormat) + " csv with " + field::ref(field::kColInput) +
                  " and " + field::ref(field::kColOutput) + ")");
}

void check_format(const std::string& format) {
  const auto& f = trace_formats();
  if (!format.empty() && std::find(f.begin(), f.end(), format) == f.end()) {
    throw Error(
        field::kTraceFormat,
        "unknown format '" + format + "' (known: azure, burstgpt, mooncake, vidur, csv, servesim)");
  }
}

}  // namespace

Trace import_trace(const std::string& path, const ImportOptions& opt) {
  check_format(opt.format);
  if (opt.hash_block_size < 0) throw Error(field::kHashBlockSize, "must be >= 0");
  if (opt.format == "servesim" || (opt.format.empty() && is_hdf5(path))) {
    Trace t = read_trace_h5(path);
    t.file = path;
    t.stored = true;
    return t;
  }
  Trace t;
  t.file = t.source = path;
  t.options = opt.describe();
  Rows rows(path, opt, t);
  // One pass over one reader, so that pipes work too: the first non-blank line is either a
  // JSON object (Mooncake) or a CSV header.
  LineReader in(path);
  std::string_view first;
  do {
    if (!in.next(first)) throw Error(path, 0, "", "empty file");
  } while (blank(first));
  const bool json = clean_header_name(first).substr(0, 1) == "{";
  if (opt.format == "mooncake" || (opt.format.empty() && json)) {
    t.format = "mooncake";
    import_mooncake(path, opt, in, first, rows, t);
  } else {
    const Header h = parse_header(first, path, in.line_number());
    t.format = opt.format.empty() ? detect_csv(path, h, opt) : opt.format;
    if (t.format == "azure") import_azure(path, in, h, rows, t);
    if (t.format == "burstgpt") import_burstgpt(path, opt, in, h, rows, t);
    if (t.format == "vidur") import_vidur(path, in, h, rows, t);
    if (t.format == "csv") import_csv(path, opt, in, h, rows, t);
    if (t.counts.rows_read == 0) throw Error(path, 1, "", "no data rows (header only)");
  }
  if (t.size() == 0) {
    throw Error(path, 0, "",
                "no request left: " + std::to_string(t.counts.rows_read) +
                    " rows read, all skipped or filtered");
  }
  return t;
}

}  // namespace servesim
