// A diagnose Verdict (analysis/diagnose_verdict.hpp) in words: a one-line headline that says what
// the change means and what to do about it, and the numbers behind it, one line each. The lines
// `servesim diagnose` prints under "verdict" and puts in its JSON.
// Promises: a pure function of the Verdict; numbers print with one decimal, undefined ones as
// "-" or "n/a".
#pragma once

#include <string>
#include <vector>

#include "analysis/diagnose_verdict.hpp"

namespace servesim {

struct VerdictText {
  std::string headline;              // one line
  std::vector<std::string> details;  // the numbers behind it, one line each
};

VerdictText verdict_text(const Verdict& v);

}  // namespace servesim
