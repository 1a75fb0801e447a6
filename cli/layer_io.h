// The files of a layer run from the CLI: the epilogue chain's run-time parameters in, the
// layer's output (int32, float32, packed planes or their unpacked values) out.
#pragma once
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "apnn/engine.h"

namespace apnn::cli {

struct LayerFiles {
  std::string scale, bias, q_scale, q_zero;  // .npy float, 1-D (or a scalar for per-tensor)
  std::string out, sums;                     // output; packed outputs' per-pixel sums (optional)
  bool unpack = false;                       // packed: write the integer values instead
};

// Registers --scale --bias --q-scale --q-zero --out --sums --unpack on `cmd`.
void add_layer_options(CLI::App* cmd, LayerFiles* files, const char* out_help);

// Reads the parameter files the chain needs; a file the chain does not use, or one it needs
// that is missing, is Error(InvalidInput) naming the option.
EpilogueParams load_epilogue_params(const Epilogue& e, const LayerFiles& files);

// Writes r (atomically, file by file). Packed planes are uint32 shaped as their layout:
// apconv (N, q, Ho', Wo', words), apmm (q, N, words).
void write_layer_output(const LayerResult& r, const LayerFiles& files);

}  // namespace apnn::cli
