// What `apnn bench` measures: the precisions and shapes of issue 5, the --quick subset and
// the --shapes / --prec filters. No GPU needed.
#pragma once
#include <string>
#include <vector>

#include "apnn/engine.h"
#include "apnn/spec.h"

namespace apnn::bench {

// w{p}a{q}: 1-bit weights are +-1 (pm1) except in w1a1 (0/1 x 0/1, the cheapest case, as in
// earlier runs); wider weights are two's complement; activations are unsigned.
struct Precision {
  OperandFormat w, x;
  bool int16_out = false;    // the spec's "output": "int16" (GEMM rows where K keeps |y| within it)
  std::string name() const;  // "w1a2", "w1a2-i16"
};
Precision make_precision(int p, int q);
std::vector<Precision> gemm_precisions();  // w1a1 w1a2 w1a3 w1a4 w2a2 w2a4 w4a4 w2a8 w8a8, w1a1 w1a2 w2a2 -i16
std::vector<Precision> conv_precisions();  // w1a2 w2a2 w1a4 w2a8, w1a2 w2a2 -i16

struct GemmCase {
  std::string label;  // "MxNxK"
  ApmmShape shape;
};
struct ConvCase {
  std::string label;  // "n{N}-{H}x{W}x{C}-o{O}-k{kh}s{s}", e.g. "n8-56x56x64-o64-k3s1"
  ConvShape shape;
  ConvParams params;
};
std::string gemm_label(const ApmmShape& s);
std::string conv_label(const ConvShape& s, const ConvParams& p);

// M in {64, 1024, 8192} x N=K in {128 .. 4096}, then 8192^3.
std::vector<GemmCase> gemm_cases();
// The paper's layers (N=1, 16x16, 3x3/1 pad 1, C=O 128..1024), then ResNet-18's 3x3/1
// layers and its strided 3x3 and 1x1 downsampling layers at batch 8 and 128.
std::vector<ConvCase> conv_cases();

// Shell-style match: '*' any run of characters, '?' one character.
bool glob_match(const std::string& pattern, const std::string& text);
std::vector<std::string> split_list(const std::string& csv);  // "a,b" -> {a, b}; empty items dropped

struct Selection {
  bool quick = false;                   // the small subset the tests run
  std::vector<std::string> shapes;      // glob patterns over labels; empty: all
  std::vector<std::string> precisions;  // names; empty: all
};
// The cases and precisions a selection keeps, in list order. Throws Error(InvalidInput) for
// a precision name that is not in the list, a pattern that matches no shape of either op, or
// any pattern when neither op runs (--fusion-only).
struct Plan {
  std::vector<GemmCase> gemm;
  std::vector<Precision> gemm_prec;
  std::vector<ConvCase> conv;
  std::vector<Precision> conv_prec;
};
Plan select(const Selection& sel, bool gemm, bool conv);

}  // namespace apnn::bench
