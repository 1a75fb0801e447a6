// The results of one `apnn bench` run: rows of ours and the vendor's, the arithmetic that
// compares them, the terminal table and the JSON document (--json). No GPU needed.
//
// Every implementation of a shape is charged the same logical operations (ops: 2*M*N*K for a
// GEMM, 2*N*O*Ho*Wo*C*Kh*Kw for a convolution), so TOPS ratios are time ratios. Our binary
// work is ops*p*q 1-bit AND-popcount operations, compared with the measured binary peaks.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/clock_sampler.h"
#include "bench/svg_chart.h"
#include "runtime/steady_timing.h"

namespace apnn::bench {

// A shape's int32 outputs written alone, rotated over the row's sets and timed by its rule
// (bench/output_floor.h): by the driver's memset and by a write-only kernel of ours. The
// faster, us(), is a floor for any kernel that writes them where the bytes rather than the
// launch dominate (0: neither measured).
struct OutputAlone {
  double memset_us = 0, kernel_us = 0;
  double us() const;
};

struct Row {
  std::string op;          // "gemm" | "conv"
  std::string shape;       // the case's label
  nlohmann::json dims;     // {"m","n","k"} or {"batch","in_channels",...}
  double ops = 0;          // logical operations of the shape
  std::string impl;        // "apnn" or a vendor path: "cublaslt-int8", "cudnn-fp16-nhwc", ...
  std::string prec;        // "w1a2" for ours, the data type for the vendor's
  int p = 0, q = 0;        // ours only
  bool available = true;   // false: the vendor offers nothing for this shape (see note)
  std::string note;        // why unavailable, or what was picked (algorithm, engine)
  Timing t;
  ClockStats clocks;       // the SM clock and power while it was timed (samples 0: not sampled)
  uint64_t checked = 0, mismatches = 0;  // ours: output elements compared with the CPU reference
  nlohmann::json spec;     // ours: the canonical kernel spec
  std::string tile_source; // ours: "tuned" (apnn tune's recorded winner) or "untuned"
  std::string core;        // ours: "wgmma", "wgmma-halo" (tile.core halo), "wgmma-tmaC" (tile.cluster C) or "mma.sync"
  OutputAlone out_alone;  // ours: the shape's int32 outputs written alone (0: not measured)
};

Row make_row(const std::string& op, const std::string& shape, const nlohmann::json& dims, double ops,
             const std::string& impl, const std::string& prec);

struct Peaks {
  double wgmma_b1_tops = 0;     // 0: not measured (no sm_90a)
  double mma_sync_b1_tops = 0;
  double dram_write_gbs = 0;    // device memory write bandwidth (cuMemsetD32 over 2 GiB); 0: not measured
  double launch_floor_us = 0;   // an empty kernel (one wave of blocks) under the timing rule,
                                // launched plainly; 0: not measured
  double launch_floor_early_us = 0;  // the same launched with early start, as ours on sm_90a, letting
                                     // the next launch go at once: what a launch of ours costs
                                     // doing nothing; 0: not measured
  // The overlap probe (sm_90a; 0: not measured): bulk copies from an L2-resident buffer into
  // shared memory on every SM, alone; then wgmma at full issue, 16-byte stores into a buffer
  // past the L2 and those reads, all at once. Whether the GEMM's three streams can overlap.
  double l2_read_gbs = 0;
  double overlap_wgmma_tops = 0, overlap_write_gbs = 0, overlap_read_gbs = 0;
};

// Bytes of the int32 output of a row's shape (M*N, or N*O*Ho*Wo for a convolution), and the
// time writing them takes at the measured write bandwidth: a floor for every kernel that
// writes int32, whatever its arithmetic (0 when the bandwidth was not measured).
double int32_output_bytes(const nlohmann::json& dims);
double write_floor_us(double bytes, double write_gbs);

double tops(double ops, double us);                      // 1e12 operations per second
double speedup(double vendor_us, double ours_us);        // > 1: ours is faster
double efficiency(double binary_tops, double peak_tops); // fraction of the peak, 0 without a peak
double gemm_ops(int64_t M, int64_t N, int64_t K);
double conv_ops(int64_t N, int64_t O, int64_t Ho, int64_t Wo, int64_t C, int kh, int kw);

struct Report {
  std::string device, arch;
  Peaks peaks;
  nlohmann::json settings;  // the timing rule and options used
  std::vector<Row> rows;
  nlohmann::json fusion = nlohmann::json::array();  // the fusion section's rows (run_fusion.cpp)

  // The fastest available vendor row of (op, shape); nullptr when there is none.
  const Row* best_vendor(const std::string& op, const std::string& shape) const;
  // One row as JSON, with its TOPS and, for ours, speedup and binary efficiency.
  nlohmann::json row_json(const Row& r) const;
  nlohmann::json to_json() const;
  void print_table(std::FILE* out) const;
  // One panel per op: our speedup over the best vendor path, per shape and precision.
  std::vector<ChartPanel> speedup_panels() const;
};

}  // namespace apnn::bench
