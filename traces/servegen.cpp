#include "traces/servegen.hpp"

#include <algorithm>
#include <boost/random/gamma_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_01.hpp>
#include <boost/random/weibull_distribution.hpp>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.hpp"
#include "util/format.hpp"
#include "util/hash.hpp"
#include "util/text_input.hpp"

namespace servesim {

namespace {

constexpr int64_t kMaxTokens = 1 << 24;  // a PMF's largest token count (far above any context)
constexpr double kMaxRate = 1e6;         // requests per second in a window

void skip_spaces(const std::string& t, size_t& i) {
  while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i])))
    ++i;
}

// The window rows of a trace CSV.
std::vector<ServeGenWindow> read_windows(const std::string& path) {
  LineReader in(path);
  CsvSplitter split;
  std::vector<std::string_view> f;
  std::vector<ServeGenWindow> out;
  std::string reason;
  const char* names[] = {"window_start_s", "rate", "cv", "iat_dist", "arg1", "arg2"};
  for (std::string_view line; in.next(line);) {
    const int n = int(in.line_number());
    if (line.empty()) continue;
    if (!split.split(line, f, reason)) throw Error(path, n, "", reason);
    if (f.size() != 6) {
      throw Error(path, n, "",
                  "expected 6 fields (window_start_s,rate,cv,iat_dist,arg1,arg2), "
                  "got " +
                      std::to_string(f.size()));
    }
    ServeGenWindow w;
    double* numbers[] = {&w.start_s, &w.rate, &w.cv, nullptr, &w.shape, &w.scale};
    for (int k = 0; k < 6; ++k) {
      if (k == 3) continue;
      if (!parse_double(f[k], *numbers[k]) || *numbers[k] < 0) {
        throw Error(path, n, names[k], "'" + std::string(f[k]) + "' is not a number >= 0");
      }
    }
    w.dist = std::string(f[3]);
    if (w.rate > kMaxRate) throw Error(path, n, "rate", "above 1e6 requests per second");
    if (w.dist.empty() != (w.rate == 0)) {
      throw Error(path, n, "iat_dist", "empty exactly when the window is idle (rate 0)");
    }
    if (!w.dist.empty()) {
      if (w.dist != "Gamma" && w.dist != "Weibull") {
        throw Error(path, n, "iat_dist", "'" + w.dist + "': expected Gamma, Weibull or empty");
      }
      if (!(w.shape > 0)) throw Error(path, n, "arg1", "the shape must be > 0");
      if (!(w.scale > 0)) throw Error(path, n, "arg2", "the scale must be > 0");
    }
    if (!out.empty() && !(w.start_s > out.back().start_s)) {
      throw Error(path, n, "window_start_s", "windows must be in increasing order");
    }
    // The windows' length is the first two starts apart: a day at most (ServeGen's are 600 s).
    // Starts 1e12 s apart were blamed on --servegen-rate-scale ("over 1e8 requests in a window").
    if (out.size() == 1 && !(w.start_s - out[0].start_s <= 86400)) {
      throw Error(path, n, "window_start_s",
                  format("%g s after the first window's start, which makes every window that "
                         "long: at most a day (ServeGen's windows are 600 s)",
                         w.start_s - out[0].start_s));
    }
    out.push_back(w);
  }
  if (out.empty()) throw Error(path, 0, "", "no windows");
  return out;
}

std::string dataset_path(const std::string& trace_csv) {
  const std::string tail = "-trace.csv";
  if (trace_csv.size() < tail.size() ||
      trace_csv.compare(trace_csv.size() - tail.size(), tail.size(), tail) != 0) {
    throw Error(trace_csv, 0, "",
                "a ServeGen client is chunk-N-trace.csv, with chunk-N-dataset.json beside it");
  }
  return trace_csv.substr(0, trace_csv.size() - tail.size()) + "-dataset.json";
}

}  // namespace

TokenCdf parse_pmf_literal(const std::string& text, const std::string& file,
                           const std::string& field) {
  auto bad = [&](const std::string& why) { return Error(file, 0, field, why); };
  size_t i = 0;
  skip_spaces(text, i);
  if (i >= text.size() || text[i] != '{') throw bad("expected a dict literal '{token: p, ...}'");
  ++i;
  std::vector<std::pair<int64_t, double>> pairs;
  for (;;) {
    skip_spaces(text, i);
    if (i < text.size() && text[i] == '}' && pairs.empty()) {  // "{}": a window without data
      ++i;
      break;
    }
    size_t key_end = text.find(':', i);
    if (key_end == std::string::npos) throw bad("expected 'token: p'");
    int64_t token = 0;
    if (!parse_int(std::string_view(text).substr(i, key_end - i), token) || token < 0 ||
        token > kMaxTokens) {
      throw bad("'" + text.substr(i, key_end - i) + "' is not a token count in [0, 2^24]");
    }
    i = key_end + 1;
    const size_t value_end = text.find_first_of(",}", i);
    if (value_end == std::string::npos) throw bad("unterminated dict literal");
    double p = 0;
    if (!parse_double(std::string_view(text).substr(i, value_end - i), p) || p < 0 || p > 1) {
      throw bad("'" + text.substr(i, value_end - i) + "' is not a probability in [0, 1]");
    }
    pairs.emplace_back(token, p);
    i = value_end + 1;
    if (text[value_end] == '}') break;
  }
  skip_spaces(text, i);
  if (i != text.size()) throw bad("text after the dict literal");
  TokenCdf cdf;
  if (pairs.empty()) return cdf;
  double total = 0;
  for (const auto& [t, p] : pairs)
    total += p;
  if (!(total > 0.5 && total < 1.5)) throw bad("the probabilities sum to " + std::to_string(total));
  // Each token's probability summed in the order given, then accumulated in token order: the
  // same numbers a dense CDF over 0..max holds at the tokens with mass.
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [t, p] : pairs) {
    if (cdf.tokens.empty() || cdf.tokens.back() != t) {
      cdf.tokens.push_back(int32_t(t));
      cdf.cumulative.push_back(0.0);
    }
    cdf.cumulative.back() += p / total;
  }
  for (size_t k = 1; k < cdf.cumulative.size(); ++k)
    cdf.cumulative[k] += cdf.cumulative[k - 1];
  cdf.cumulative.back() = 1.0;
  return cdf;
}

ServeGenClient load_servegen_client(const std::string& trace_csv) {
  ServeGenClient c;
  c.name = trace_csv;
  const std::string json_path = dataset_path(trace_csv);
  c.windows = read_windows(trace_csv);
  if (c.windows.size() > 1) c.window_s = c.windows[1].start_s - c.windows[0].start_s;
  std::ifstream in(json_path);
  if (!in) throw Error(json_path, 0, "", "cannot read (the dataset beside " + trace_csv + ")");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(json_path, 0, "", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw Error(json_path, 0, "", "expected an object keyed by window start");
  for (const auto& [key, fields] : j.items()) {
    int64_t start = 0;
    if (!parse_int(key, start) || start < 0) {
      throw Error(json_path, 0, key, "a window start must be an integer number of seconds");
    }
    if (!fields.is_object()) throw Error(json_path, 0, key, "expected an object of fields");
    if (fields.empty()) {  // a window without data (the public release ends chunks with them)
      c.input_cdf[start] = TokenCdf{};
      c.output_cdf[start] = TokenCdf{};
      continue;
    }
    const std::string& window = key;
    const nlohmann::json& values = fields;
    auto pmf = [&](const std::string& field) {
      const std::string where = window + "." + field;
      if (!values.contains(field) || !values[field].is_string()) {
        throw Error(json_path, 0, where, "expected a string holding a dict literal");
      }
      return parse_pmf_literal(values[field].get<std::string>(), json_path, where);
    };
    c.output_cdf[start] = pmf("output_tokens");
    if (fields.contains("input_tokens")) {
      c.input_cdf[start] = pmf("input_tokens");
      continue;
    }
    // Multimodal: every other *_tokens field is a modality of the input.
    std::vector<std::string> names;
    for (const auto& [name, value] : fields.items()) {
      const std::string tail = "_tokens";
      if (name != "output_tokens" && name.size() > tail.size() &&
          name.compare(name.size() - tail.size(), tail.size(), tail) == 0) {
        names.push_back(name);
      }
    }
    if (names.empty()) {
      throw Error(json_path, 0, key + ".input_tokens",
                  "expected input_tokens, or a *_tokens field per modality (text_tokens, "
                  "image_tokens, ...)");
    }
    for (const std::string& name : names) {  // each becomes a results column
      if (!std::all_of(name.begin(), name.end(), [](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
          })) {
        throw Error(json_path, 0, key + "." + name,
                    "a modality's name holds only letters, digits and '_'");
      }
    }
    if (names.size() > 16) throw Error(json_path, 0, key, "more than 16 modalities");
    std::sort(names.begin(), names.end());
    if (c.input_fields.empty()) c.input_fields = names;
    if (names != c.input_fields) {
      throw Error(json_path, 0, key, "the window's modalities differ from the first window's");
    }
    std::vector<TokenCdf>& parts = c.input_parts[start];
    for (const std::string& name : names)
      parts.push_back(pmf(name));
  }
  return c;
}

namespace {

// The CDF of the latest dataset window at or before T with data; null when there is none.
const TokenCdf* cdf_at(const std::map<int64_t, TokenCdf>& cdfs, double t) {
  auto it = cdfs.upper_bound(int64_t(std::floor(t)));
  while (it != cdfs.begin()) {
    --it;
    if (!it->second.empty()) return &it->second;
  }
  return nullptr;
}

// The first token whose cumulative probability reaches U (ServeGen's searchsorted).
int32_t draw_raw(const TokenCdf& cdf, double u) {
  const size_t k = size_t(std::lower_bound(cdf.cumulative.begin(), cdf.cumulative.end(), u) -
                          cdf.cumulative.begin());
  return cdf.tokens[std::min(k, cdf.tokens.size() - 1)];
}

// The same, at least 1.
int32_t draw_tokens(const TokenCdf& cdf, double u) {
  return std::max<int32_t>(1, draw_raw(cdf, u));
}

// The modalities' CDFs of the latest dataset window at or before T with data; null when none.
const std::vector<TokenCdf>* parts_at(const std::map<int64_t, std::vector<TokenCdf>>& parts,
                                      double t) {
  auto it = parts.upper_bound(int64_t(std::floor(t)));
  while (it != parts.begin()) {
    --it;
    bool data = !it->second.empty();
    for (const TokenCdf& cdf : it->second)
      data = data && !cdf.empty();
    if (data) return &it->second;
  }
  return nullptr;
}

}  // namespace

Workload generate_servegen(const std::vector<ServeGenClient>& clients, const ServeGenOptions& o) {
  if (!(o.start_s >= 0) || !std::isfinite(o.start_s)) {
    throw Error(field::kServegenStartS, "must be a number of seconds >= 0");
  }
  if (!(o.duration_s > 0) || !std::isfinite(o.duration_s)) {
    throw Error(field::kServegenDurationS, "must be a number of seconds > 0");
  }
  if (!(o.rate_scale > 0) || !(o.rate_scale <= 1e6)) {
    throw Error(field::kServegenRateScale, "must be a number in (0, 1e6]");
  }
  if (clients.empty()) throw Error(field::kServegen, "give at least one client");
  struct Arrival {
    double t;
    int32_t in, out;
    size_t parts;  // its row in `drawn` when the input is by modality
  };
  std::vector<Arrival> all;
  // By modality when a client is multimodal: the names of every client's modalities, a
  // language client's input counted as text_tokens; each arrival's counts in `drawn`.
  InputParts parts;
  for (const ServeGenClient& c : clients) {
    for (const std::string& f : c.input_fields) {
      if (std::find(parts.names.begin(), parts.names.end(), f) == parts.names.end()) {
        parts.names.push_back(f);
      }
    }
  }
  const auto column = [&](const std::string& name) {
    auto it = std::find(parts.names.begin(), parts.names.end(), name);
    if (it == parts.names.end()) it = parts.names.insert(it, name);
    return size_t(it - parts.names.begin());
  };
  std::vector<std::vector<size_t>> columns(clients.size());  // client's field -> column
  if (!parts.empty()) {
    for (size_t k = 0; k < clients.size(); ++k) {
      for (const std::string& f : clients[k].input_fields)
        columns[k].push_back(column(f));
      if (clients[k].input_fields.empty()) columns[k].push_back(column("text_tokens"));
    }
  }
  std::vector<int32_t> drawn;
  const size_t width = parts.names.size();
  const double end = o.start_s + o.duration_s;
  for (size_t k = 0; k < clients.size(); ++k) {
    const ServeGenClient& c = clients[k];
    boost::random::mt19937_64 rng(hash_combine(o.seed, k));
    boost::random::uniform_01<double> unit;
    for (const ServeGenWindow& w : c.windows) {
      const double w_end = w.start_s + c.window_s;
      if (w.rate <= 0 || w_end <= o.start_s || w.start_s >= end) continue;
      const TokenCdf* in_cdf = cdf_at(c.input_cdf, w.start_s);
      const std::vector<TokenCdf>* in_parts = parts_at(c.input_parts, w.start_s);
      const TokenCdf* out_cdf = cdf_at(c.output_cdf, w.start_s);
      if ((in_cdf == nullptr && in_parts == nullptr) || out_cdf == nullptr) {
        throw Error(c.name, 0, "window_start_s",
                    "window " + std::to_string(int64_t(w.start_s)) +
                        " has no dataset window at or before it");
      }
      const double expected = w.rate * o.rate_scale * c.window_s;
      if (expected > 1e8) {
        throw Error(field::kServegenRateScale,
                    format("%s's window at %g s (%g req/s over %g s) times %g is over 1e8 "
                           "requests",
                           c.name.c_str(), w.start_s, w.rate, c.window_s, o.rate_scale));
      }
      const size_t n = size_t(std::ceil(expected));
      std::vector<double> gaps(n);
      double sum = 0;
      for (double& g : gaps) {
        g = w.dist == "Gamma" ? boost::random::gamma_distribution<double>(w.shape, w.scale)(rng)
                              : boost::random::weibull_distribution<double>(w.shape, w.scale)(rng);
        sum += g;
      }
      const double factor = sum > 0 ? c.window_s / sum : 0;  // the gaps fill the window
      double t = w.start_s;
      for (double g : gaps) {
        t += g * factor;
        if (!(t < w_end)) break;
        if (t < o.start_s || t >= end) continue;
        int64_t in = 0;
        const size_t row = drawn.size();
        drawn.resize(row + width, 0);
        if (in_cdf != nullptr) {
          in = draw_tokens(*in_cdf, unit(rng));
          if (width > 0) drawn[row + columns[k][0]] = int32_t(in);
        } else {  // the modalities' tokens, one draw each
          for (size_t m = 0; m < in_parts->size(); ++m) {
            const int32_t tokens = draw_raw((*in_parts)[m], unit(rng));
            drawn[row + columns[k][m]] = tokens;
            in += tokens;
          }
          in = std::clamp<int64_t>(in, 1, kMaxTokens);
        }
        all.push_back({t - o.start_s, int32_t(in), draw_tokens(*out_cdf, unit(rng)), row});
      }
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Arrival& a, const Arrival& b) { return a.t < b.t; });
  if (all.size() > UINT32_MAX / 2) throw Error(field::kServegenDurationS, "too many requests");
  Workload out(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    RequestSpec& r = out[i];
    r.id = uint32_t(i);
    r.arrival_s = all[i].t;
    r.input_tokens = all[i].in;
    r.output_tokens = all[i].out;
  }
  if (!parts.empty()) {
    parts.tokens.reserve(drawn.size());
    for (const Arrival& a : all)
      parts.tokens.insert(parts.tokens.end(), drawn.begin() + std::ptrdiff_t(a.parts),
                          drawn.begin() + std::ptrdiff_t(a.parts + width));
    out.input_parts = std::move(parts);
  }
  return out;
}

}  // namespace servesim
