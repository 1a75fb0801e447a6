// Our kernels prepared for timing: rotated input sets (engine/input_sets.h) and a check of
// set 0 against the CPU reference before any timing.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apnn/engine.h"
#include "engine/apmm_runner.h"
#include "engine/conv_runner.h"
#include "engine/input_sets.h"

namespace apnn::bench {

struct CheckResult {
  uint64_t checked = 0, mismatches = 0;
  std::string first_mismatch;
};

// Rows of the output to compare with the CPU reference: all of them when the product is
// small, else evenly spaced rows (first and last included) worth about 2^31 multiply-adds.
std::vector<int64_t> rows_to_check(int64_t rows, int64_t work_per_row);

class OursGemm {
 public:
  // `spec` has its tile (with_tile_for); sets as for the vendor's (rotation_sets).
  OursGemm(Engine& engine, const KernelSpec& spec, const ApmmShape& s);
  CheckResult check();
  void launch(int set);
  DeviceBuffer& output(int set) { return in_->y[set].values; }  // set's int32 (or int16) output
  int sets() const { return in_->sets(); }

 private:
  ApmmShape s_;
  Epilogue out_;  // the plain output's element (int32, or int16): how check() reads it back
  std::unique_ptr<ApmmRunner> runner_;
  std::unique_ptr<ApmmInputSets> in_;  // plain int32 or int16 outputs (specs without a chain)
  EpilogueDevice none_;
};

class OursConv {
 public:
  OursConv(Engine& engine, const KernelSpec& spec, const ConvShape& s);
  CheckResult check();  // images 0 and N-1
  void launch(int set);
  DeviceBuffer& output(int set) { return in_->y[set].values; }  // set's int32 (or int16) output
  int sets() const { return in_->sets(); }

 private:
  ConvGeometry g_;
  Epilogue out_;  // the plain output's element (int32, or int16): how check() reads it back
  std::unique_ptr<ConvRunner> runner_;
  std::unique_ptr<ConvInputSets> in_;
  EpilogueDevice none_;
};

}  // namespace apnn::bench
