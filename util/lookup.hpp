// Name look-up shared by the GPU and model catalogues: case-insensitive, and an unknown name is an
// Error that lists every known one, so a typo is fixed from the message alone.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace servesim {

inline std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The entry of CATALOGUE whose `name` equals NAME (ignoring case), or Error(FIELD, ...) naming
// WHAT ("GPU", "model"), the known names, and HINT (how to describe a new one).
template <class Spec>
const Spec& find_in_catalogue(const std::vector<Spec>& catalogue, std::string_view name,
                              const char* field, const char* what, const std::string& hint) {
  const std::string key = lowercase(name);
  std::string known;
  for (const Spec& s : catalogue) {
    if (s.name == key) return s;
    known.append(known.empty() ? "" : ", ").append(s.name);
  }
  throw Error(field, std::string("unknown ") + what + " '" + std::string(name) +
                         "' (known: " + known + hint + ")");
}

}  // namespace servesim
