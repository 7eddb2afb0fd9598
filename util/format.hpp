// format(): printf into a std::string of any length (a long path or number is never cut), for
// reports built line by line.
#pragma once

#include <string>

namespace servesim {

// The format attribute keeps the compiler's argument checks at every call site. The body lives in
// format.cpp, behind a va_list, so that GCC does not warn about the first, deliberately short,
// attempt being truncated (it is retried at full length).
std::string format(const char* spec, ...) __attribute__((format(printf, 1, 2)));

// S as one CSV field (RFC 4180): quoted, its quotes doubled, when it holds a comma, quote or line
// break; as it is otherwise.
std::string csv_field(const std::string& s);

}  // namespace servesim
