#include "bench/report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace apnn::bench {

double OutputAlone::us() const {
  if (memset_us <= 0 || kernel_us <= 0) return std::max(memset_us, kernel_us);
  return std::min(memset_us, kernel_us);
}

double tops(double ops, double us) { return us > 0 ? ops / (us * 1e-6) / 1e12 : 0; }
double speedup(double vendor_us, double ours_us) { return ours_us > 0 ? vendor_us / ours_us : 0; }
double efficiency(double binary_tops, double peak_tops) { return peak_tops > 0 ? binary_tops / peak_tops : 0; }

double int32_output_bytes(const nlohmann::json& dims) {
  if (!dims.is_object()) return 0;
  if (dims.contains("m")) return 4.0 * dims.value("m", 0.0) * dims.value("n", 0.0);
  return 4.0 * dims.value("batch", 0.0) * dims.value("out_channels", 0.0) * dims.value("out_height", 0.0) *
         dims.value("out_width", 0.0);
}

double write_floor_us(double bytes, double write_gbs) { return write_gbs > 0 ? bytes / (write_gbs * 1e3) : 0; }
double gemm_ops(int64_t M, int64_t N, int64_t K) { return 2.0 * M * N * K; }
double conv_ops(int64_t N, int64_t O, int64_t Ho, int64_t Wo, int64_t C, int kh, int kw) {
  return 2.0 * N * O * Ho * Wo * C * kh * kw;
}

Row make_row(const std::string& op, const std::string& shape, const nlohmann::json& dims, double ops,
             const std::string& impl, const std::string& prec) {
  Row r;
  r.op = op;
  r.shape = shape;
  r.dims = dims;
  r.ops = ops;
  r.impl = impl;
  r.prec = prec;
  return r;
}

const Row* Report::best_vendor(const std::string& op, const std::string& shape) const {
  const Row* best = nullptr;
  for (const Row& r : rows)
    if (r.impl != "apnn" && r.available && r.op == op && r.shape == shape && (!best || r.t.us < best->t.us)) best = &r;
  return best;
}

nlohmann::json Report::row_json(const Row& r) const {
  nlohmann::json j = {{"op", r.op}, {"shape", r.shape}, {"dims", r.dims}, {"impl", r.impl}, {"prec", r.prec},
                      {"ops", r.ops}, {"available", r.available}};
  if (!r.note.empty()) j["note"] = r.note;
  if (!r.available) return j;
  j["us"] = r.t.us;
  j["tops"] = tops(r.ops, r.t.us);
  j["timing"] = {{"launches", r.t.launches}, {"repeats", r.t.repeats}, {"sets", r.t.sets}};
  if (r.clocks.samples > 0) j["clocks"] = clock_json(r.clocks);
  if (r.impl != "apnn") return j;
  j["p"] = r.p;
  j["q"] = r.q;
  j["spec"] = r.spec;
  j["tile_source"] = r.tile_source;
  j["core"] = r.core;
  j["checked"] = r.checked;
  j["mismatches"] = r.mismatches;
  const double binary = tops(r.ops * r.p * r.q, r.t.us);
  j["binary_tops"] = binary;
  j["binary_eff_wgmma"] = efficiency(binary, peaks.wgmma_b1_tops);
  j["binary_eff_mma_sync"] = efficiency(binary, peaks.mma_sync_b1_tops);
  j["int32_out_bytes"] = int32_output_bytes(r.dims);
  j["int32_out_floor_us"] = write_floor_us(int32_output_bytes(r.dims), peaks.dram_write_gbs);
  j["int32_out_only_us"] = r.out_alone.us();
  j["int32_out_memset_us"] = r.out_alone.memset_us;
  j["int32_out_write_kernel_us"] = r.out_alone.kernel_us;
  if (const Row* v = best_vendor(r.op, r.shape)) {
    j["best_vendor"] = v->impl;
    j["best_vendor_us"] = v->t.us;
    j["speedup"] = speedup(v->t.us, r.t.us);
  }
  return j;
}

nlohmann::json Report::to_json() const {
  nlohmann::json rows_j = nlohmann::json::array();
  for (const Row& r : rows) rows_j.push_back(row_json(r));
  return {{"format", "apnn-bench-1"},
          {"device", device},
          {"arch", arch},
          {"peaks",
           {{"wgmma_b1_and_tops", peaks.wgmma_b1_tops},
            {"mma_sync_b1_and_tops", peaks.mma_sync_b1_tops},
            {"dram_write_gbs", peaks.dram_write_gbs},
            {"launch_floor_us", peaks.launch_floor_us},
            {"launch_floor_early_us", peaks.launch_floor_early_us},
            {"l2_read_gbs", peaks.l2_read_gbs},
            {"overlap",
             {{"wgmma_b1_and_tops", peaks.overlap_wgmma_tops},
              {"write_gbs", peaks.overlap_write_gbs},
              {"l2_read_gbs", peaks.overlap_read_gbs}}}}},
          {"settings", settings},
          {"rows", rows_j},
          {"fusion", fusion}};
}

namespace {

std::string us_cell(const Row* r) {
  if (!r) return "-";
  if (!r->available) return "n/a";
  return fmt::format("{:.2f}", r->t.us);
}

}  // namespace

// Per shape: one line per precision of ours, with the vendor's times repeated as columns.
void Report::print_table(std::FILE* out) const {
  for (const std::string op : {"gemm", "conv"}) {
    std::vector<std::string> vendors, shapes;
    for (const Row& r : rows) {
      if (r.op != op) continue;
      if (r.impl != "apnn" && std::find(vendors.begin(), vendors.end(), r.impl) == vendors.end()) vendors.push_back(r.impl);
      if (std::find(shapes.begin(), shapes.end(), r.shape) == shapes.end()) shapes.push_back(r.shape);
    }
    if (shapes.empty()) continue;
    // With --clocks: ours' mean SM clock while timed (the JSON has every row's).
    const bool clocks = std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.op == op && r.clocks.samples > 0; });
    // The measured floor of writing the int32 output alone (Row::out_alone), where measured.
    const bool out_only = std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.op == op && r.out_alone.us() > 0; });
    std::string head = fmt::format("{:<24} {:<8} {:>9} {:>8}", op == "gemm" ? "GEMM MxNxK" : "conv", "prec", "ours us", "TOPS");
    if (out_only) head += fmt::format(" {:>11}", "out-only us");
    for (const std::string& v : vendors) head += fmt::format(" {:>16}", v + " us");
    head += fmt::format(" {:>8} {:>8} {:>6} {:>6} {}{}", "speedup", "bin TOPS", "%wgmma", "%mma", clocks ? "  MHz " : "",
                        "exact");
    std::fprintf(out, "%s\n", head.c_str());
    for (const std::string& shape : shapes) {
      std::vector<const Row*> vrow;
      for (const std::string& v : vendors) {
        const Row* found = nullptr;
        for (const Row& r : rows)
          if (r.op == op && r.shape == shape && r.impl == v) found = &r;
        vrow.push_back(found);
      }
      const Row* best = best_vendor(op, shape);
      for (const Row& r : rows) {
        if (r.op != op || r.shape != shape || r.impl != "apnn") continue;
        const double binary = tops(r.ops * r.p * r.q, r.t.us);
        std::string line = fmt::format("{:<24} {:<8} {:>9.2f} {:>8.1f}", shape, r.prec, r.t.us, tops(r.ops, r.t.us));
        if (out_only) line += r.out_alone.us() > 0 ? fmt::format(" {:>11.2f}", r.out_alone.us()) : fmt::format(" {:>11}", "-");
        for (const Row* v : vrow) line += fmt::format(" {:>16}", us_cell(v));
        line += fmt::format(" {:>8} {:>8.0f} {:>5.1f}% {:>5.1f}% {}{}",
                            best ? fmt::format("{:.2f}x", speedup(best->t.us, r.t.us)) : "-", binary,
                            100 * efficiency(binary, peaks.wgmma_b1_tops), 100 * efficiency(binary, peaks.mma_sync_b1_tops),
                            !clocks ? "" : r.clocks.samples > 0 ? fmt::format("{:>5.0f} ", r.clocks.sm_mhz_mean) : "    - ",
                            r.mismatches == 0 ? "yes" : "NO");
        std::fprintf(out, "%s\n", line.c_str());
      }
    }
    for (const Row& r : rows)
      if (r.op == op && r.impl != "apnn" && !r.available)
        std::fprintf(out, "  %s %s: %s\n", r.impl.c_str(), r.shape.c_str(), r.note.c_str());
    std::fprintf(out, "\n");
  }
}

std::vector<ChartPanel> Report::speedup_panels() const {
  std::vector<ChartPanel> panels;
  for (const std::string op : {"gemm", "conv"}) {
    ChartPanel p;
    p.title = fmt::format("{} on {}: apnn vs the best vendor path", op == "gemm" ? "GEMM" : "Convolution", device);
    p.y_label = "speedup over the best vendor path (log2)";
    for (const Row& r : rows) {
      if (r.op != op || r.impl != "apnn") continue;
      if (std::find(p.groups.begin(), p.groups.end(), r.shape) == p.groups.end()) p.groups.push_back(r.shape);
      if (std::find(p.series.begin(), p.series.end(), r.prec) == p.series.end()) p.series.push_back(r.prec);
    }
    if (p.groups.empty()) continue;
    p.values.assign(p.groups.size(), std::vector<double>(p.series.size(), NAN));
    for (const Row& r : rows) {
      if (r.op != op || r.impl != "apnn") continue;
      const Row* v = best_vendor(op, r.shape);
      if (!v) continue;
      const size_t g = std::find(p.groups.begin(), p.groups.end(), r.shape) - p.groups.begin();
      const size_t k = std::find(p.series.begin(), p.series.end(), r.prec) - p.series.begin();
      p.values[g][k] = speedup(v->t.us, r.t.us);
    }
    panels.push_back(std::move(p));
  }
  return panels;
}

}  // namespace apnn::bench
