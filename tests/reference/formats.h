// Every operand format: 1..8 bits x the three encodings.
#pragma once
#include <vector>

#include "apnn/encoding.h"

namespace reference_test {

inline std::vector<apnn::OperandFormat> all_formats() {
  std::vector<apnn::OperandFormat> out;
  for (int bits = 1; bits <= apnn::kMaxBits; ++bits)
    for (apnn::Encoding e : {apnn::Encoding::Unsigned, apnn::Encoding::Pm1, apnn::Encoding::Signed})
      out.push_back({bits, e});
  return out;
}

}  // namespace reference_test
