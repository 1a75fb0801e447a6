// The GEMM and convolution sections of a run (run_bench.cpp drives them).
#pragma once
#include <cstddef>
#include <cstdio>
#include <functional>

#include "apnn/engine.h"
#include "bench/cases.h"
#include "bench/report.h"
#include "bench/timing.h"

namespace apnn::bench {

struct Section {
  Engine& engine;
  Report& report;
  TimingRule rule;
  size_t l2 = 0;
  bool mismatch = false;  // an output of ours differed from the reference
};

// Selects the fastest candidate (algorithm / engine config; timing.h fastest_candidate)
// with use(i), then times it under the full rule.
Timing time_best_candidate(const TimingRule& rule, int candidates, int sets, const std::function<void(int)>& use,
                           const std::function<void(int)>& launch, int* chosen);

void run_gemm_section(Section& s, const Plan& plan);
void run_conv_section(Section& s, const Plan& plan);  // built only with cuDNN's header
// Fused conv -> epilogue chain against the unfused sequence (no vendor library).
void run_fusion_section(Section& s, bool quick);
void print_fusion_table(const nlohmann::json& rows, std::FILE* out);

}  // namespace apnn::bench
