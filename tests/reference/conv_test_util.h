// Helpers shared by the convolution reference suites.
#pragma once
#include <doctest/doctest.h>

#include <initializer_list>
#include <sstream>
#include <string>

#include "apnn/conv_reference.h"
#include "apnn/error.h"

namespace conv_test {

inline std::string describe(const apnn::ConvGeometry& g) {
  std::ostringstream s;
  s << "N,C,H,W = " << g.N << "," << g.C << "," << g.H << "," << g.W << " O = " << g.O << " kernel " << g.kh << "x"
    << g.kw << " stride " << g.sh << "," << g.sw << " pad " << g.ph << "," << g.pw;
  return s.str();
}

// Runs f, which must throw apnn::Error(InvalidInput) whose message contains every fragment.
template <class F>
void check_invalid_input(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    std::string all;
    for (const auto& s : fragments) all += "'" + s + "' ";
    FAIL("no apnn::Error thrown; expected one containing " << all);
  } catch (const apnn::Error& e) {
    INFO("message: " << e.what());
    CHECK(e.kind() == apnn::ErrorKind::InvalidInput);
    for (const auto& s : fragments) CHECK_MESSAGE(std::string(e.what()).find(s) != std::string::npos, "missing '" << s << "'");
  }
}

}  // namespace conv_test
