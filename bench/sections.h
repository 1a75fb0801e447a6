// The GEMM and convolution sections of a run (run_bench.cpp drives them).
#pragma once
#include <cstddef>
#include <cstdio>
#include <functional>
#include <map>

#include "apnn/engine.h"
#include "bench/cases.h"
#include "bench/clock_sampler.h"
#include "bench/ours.h"
#include "bench/output_floor.h"
#include "bench/report.h"
#include "engine/tile_choice.h"
#include "runtime/device.h"
#include "runtime/steady_timing.h"
#include "spec/kernel_rules.h"

namespace apnn::bench {

struct Section {
  Engine& engine;
  Report& report;
  TimingRule rule;
  size_t l2 = 0;
  bool mismatch = false;  // an output of ours differed from the reference
  ClockSampler* clocks = nullptr;  // watches the GPU while rows are timed; null: not sampled
  OutputFloor* output_floor = nullptr;  // times Row::out_alone; null: not measured
  std::map<std::string, OutputFloor::Result> output_floors{};  // per "op shape sets", measured once
};

// r.t = time(), with the section's clock sampler watching (r.clocks); the sampler stops
// when time() throws too.
template <class TimeFn>
void time_row(Section& s, Row& r, TimeFn&& time) {
  struct Watch {
    ClockSampler* c;
    ~Watch() {
      if (c) c->stop();
    }
  } watch{s.clocks};
  if (s.clocks) s.clocks->start();
  r.t = time();
  if (!s.clocks) return;
  r.clocks = s.clocks->stop();
  if (r.clocks.samples == 0)
    std::fprintf(stderr, "bench: no clock reading for %s %s %s (NVML did not answer)\n", r.op.c_str(), r.shape.c_str(),
                 r.impl.c_str());
}

// Selects the fastest candidate (algorithm / engine config; timing.h fastest_candidate)
// with use(i), then times it under the full rule into r (time_row).
void time_best_candidate(Section& s, Row& r, int candidates, int sets, const std::function<void(int)>& use,
                         const std::function<void(int)>& launch, int* chosen);

// Checks one configuration of ours against the CPU reference, times it under the rule
// and adds its row (spec: with its tile, which came `from` the tuning database or not;
// Ours: OursGemm or OursConv of bench/ours.h).
template <class Ours, class Shape>
void run_ours(Section& s, const std::string& op, const std::string& label, const nlohmann::json& dims, double ops,
              const Precision& p, const KernelSpec& spec, const Shape& shape, TileSource from) {
  Row r = make_row(op, label, dims, ops, "apnn", p.name());
  r.p = p.w.bits;
  r.q = p.x.bits;
  r.spec = nlohmann::json::parse(canonical_json(spec));
  r.tile_source = tile_source_name(from);
  r.core = rules::core_family(spec, current_device().arch());
  if (r.core == "wgmma-tma") r.core += std::to_string(spec.tile->cluster);
  Ours ours(s.engine, spec, shape);
  const CheckResult check = ours.check();
  r.checked = check.checked;
  r.mismatches = check.mismatches;
  if (check.mismatches) {
    s.mismatch = true;
    r.note = "MISMATCH " + check.first_mismatch;
  }
  time_row(s, r, [&] { return time_rotated(s.rule, ours.sets(), [&](int set) { ours.launch(set); }); });
  if (s.output_floor) {  // every precision of a shape writes the same int32 (or int16) output: timed once per rotation
    auto [entry, fresh] = s.output_floors.try_emplace(fmt::format("{} {} {} {}", op, label, ours.sets(), p.int16_out));
    if (fresh) entry->second = s.output_floor->time(s.rule, ours.sets(), [&](int set) -> DeviceBuffer& { return ours.output(set); });
    r.out_alone = entry->second;
  }
  const Tile& t = *spec.tile;
  std::fprintf(stderr, "%s %-24s %-16s %.2f us, %llu checked, %llu mismatches, tile %dx%dx%d %dx%d s%d (%s, %s)%s\n",
               op.c_str(), label.c_str(), r.prec.c_str(), r.t.us, static_cast<unsigned long long>(r.checked),
               static_cast<unsigned long long>(r.mismatches), t.bm, t.bn, t.bk, t.warps_m, t.warps_n, t.stages,
               r.tile_source.c_str(), r.core.c_str(),
               r.clocks.samples ? fmt::format(", SM {:.0f} MHz, {:.0f} W", r.clocks.sm_mhz_mean, r.clocks.watts_mean).c_str() : "");
  s.report.rows.push_back(std::move(r));
}

void run_gemm_section(Section& s, const Plan& plan);
void run_conv_section(Section& s, const Plan& plan);  // built only with cuDNN's header
// Fused conv -> epilogue chain against the unfused sequence (no vendor library).
void run_fusion_section(Section& s, bool quick);
void print_fusion_table(const nlohmann::json& rows, std::FILE* out);

}  // namespace apnn::bench
