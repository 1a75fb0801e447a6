// `apnn bench` without a GPU: the shape list and filters, the TOPS / speedup / efficiency
// arithmetic, the JSON row format, the table, the SVG chart and the timing plan.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <regex>
#include <string>
#include <thread>

#include "apnn/error.h"
#include "bench/cases.h"
#include "bench/clock_sampler.h"
#include "bench/output_floor.h"
#include "bench/peak_probe.h"
#include "bench/report.h"
#include "bench/svg_chart.h"
#include "bench/vendor_inputs.h"
#include "engine/apmm_runner.h"
#include "engine/input_sets.h"
#include "compiler/nvrtc_compiler.h"
#include "test_util.h"

using namespace apnn;
using namespace apnn::bench;

namespace {

size_t count_of(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

Row ours(const std::string& shape, const std::string& prec, int p, int q, double ops, double us) {
  Row r{"gemm", shape, {{"m", 1}}, ops, "apnn", prec};
  r.p = p, r.q = q, r.t.us = us, r.checked = 10;
  return r;
}

Row vendor(const std::string& shape, const std::string& impl, double ops, double us) {
  Row r{"gemm", shape, {{"m", 1}}, ops, impl, "int8"};
  r.t.us = us;
  return r;
}

}  // namespace

TEST_CASE("bench: the issue's shape and precision lists") {
  const auto g = gemm_cases();
  REQUIRE(g.size() == 19);
  CHECK(g.front().label == "64x128x128");
  CHECK(g[17].label == "8192x4096x4096");
  CHECK(g.back().label == "8192x8192x8192");
  std::vector<std::string> names;
  for (const Precision& p : gemm_precisions()) names.push_back(p.name());
  CHECK(names == std::vector<std::string>{"w1a1", "w1a2", "w1a3", "w1a4", "w2a2", "w2a4", "w4a4", "w2a8", "w8a8",
                                          "w1a1-i16", "w1a2-i16", "w2a2-i16"});
  // The int16 rows run where K keeps |y| within int16: w1a2 (pm1 W) at 8192, w2a2 (signed W:
  // |w*x| up to 6) to 5461.
  for (const Precision& p : gemm_precisions()) CHECK(p.int16_out == (p.name().find("-i16") != std::string::npos));
  std::vector<std::string> conv_names;
  for (const Precision& p : conv_precisions()) conv_names.push_back(p.name());
  CHECK(conv_names == std::vector<std::string>{"w1a2", "w2a2", "w1a4", "w2a8", "w1a2-i16", "w2a2-i16"});
  KernelSpec i16;
  i16.w = make_precision(1, 2).w;
  i16.x = make_precision(1, 2).x;
  i16.epilogue.int16_out = true;
  CHECK(apmm_max_k(i16) == 10922);
  i16.w = make_precision(2, 2).w;
  CHECK(apmm_max_k(i16) == 5461);
  i16.epilogue.int16_out = false;
  CHECK(apmm_max_k(i16) == ((int64_t{1} << 31) - 256) / 6);
  CHECK(make_precision(1, 1).w.enc == Encoding::Unsigned);
  CHECK(make_precision(1, 2).w.enc == Encoding::Pm1);
  CHECK(make_precision(2, 8).w.enc == Encoding::Signed);
  CHECK(make_precision(2, 8).x.enc == Encoding::Unsigned);

  const auto c = conv_cases();
  REQUIRE(c.size() == 4 + 2 * 10);
  CHECK(c[0].label == "n1-16x16x128-o128-k3s1");
  CHECK(c[3].label == "n1-16x16x1024-o1024-k3s1");
  CHECK(c[4].label == "n8-56x56x64-o64-k3s1");
  CHECK(c[8].label == "n8-56x56x64-o128-k3s2");
  CHECK(c[9].label == "n8-56x56x64-o128-k1s2");
  CHECK(c[9].params.ph == 0);
  CHECK(c.back().label == "n128-14x14x256-o512-k1s2");
}

TEST_CASE("bench: glob patterns and comma lists") {
  CHECK(glob_match("8192x*", "8192x8192x8192"));
  CHECK_FALSE(glob_match("8192x*", "64x8192x8192"));
  CHECK(glob_match("*x4096x4096", "1024x4096x4096"));
  CHECK(glob_match("n?-*", "n8-56x56x64-o64-k3s1"));
  CHECK_FALSE(glob_match("n?-*", "n128-56x56x64-o64-k3s1"));
  CHECK(glob_match("64x128x128", "64x128x128"));
  CHECK_FALSE(glob_match("64x128x128", "64x128x1280"));
  CHECK(glob_match("*", ""));
  CHECK(split_list("a,b,,c") == std::vector<std::string>{"a", "b", "c"});
  CHECK(split_list("").empty());
}

TEST_CASE("bench: selections (quick, --shapes, --prec) and their errors") {
  Selection quick;
  quick.quick = true;
  Plan p = select(quick, true, true);
  CHECK(p.gemm.size() == 2);
  CHECK(p.gemm_prec.size() == 4);  // w1a1 w1a2 w2a2 w1a2-i16
  CHECK(p.conv.size() == 2);
  CHECK(p.conv_prec.size() == 3);  // w1a2 w2a2 w1a2-i16

  Selection s;
  s.shapes = {"8192x*"};
  s.precisions = {"w2a8"};
  p = select(s, true, false);
  REQUIRE(p.gemm.size() == 7);
  CHECK(p.conv.empty());
  REQUIRE(p.gemm_prec.size() == 1);
  CHECK(p.gemm_prec[0].name() == "w2a8");

  s.shapes = {"n1-*"};
  s.precisions = {"w8a8"};  // a GEMM-only precision: no conv precision remains
  p = select(s, true, true);
  CHECK(p.gemm.empty());
  CHECK(p.conv.size() == 4);
  CHECK(p.conv_prec.empty());

  Selection bad;
  bad.precisions = {"w3a3"};
  CHECK_THROWS_WITH_AS(select(bad, true, true), doctest::Contains("w3a3"), Error);
  bad.precisions = {};
  bad.shapes = {"n1-*"};
  CHECK_THROWS_WITH_AS(select(bad, true, false), doctest::Contains("'n1-*' matches no shape"), Error);
  // --fusion-only: no GEMM or conv rows for --shapes to select.
  CHECK_THROWS_WITH_AS(select(bad, false, false), doctest::Contains("--shapes selects GEMM and convolution rows"), Error);
}

TEST_CASE("bench: TOPS, speedup and efficiency arithmetic") {
  CHECK(gemm_ops(64, 1024, 1024) == doctest::Approx(2.0 * 64 * 1024 * 1024));
  // ResNet-18's 3x3/1 layer at 56x56x64, batch 8: 2*N*O*Ho*Wo*C*Kh*Kw.
  CHECK(conv_ops(8, 64, 56, 56, 64, 3, 3) == doctest::Approx(2.0 * 8 * 64 * 56 * 56 * 64 * 9));
  CHECK(tops(2e12, 1e6) == doctest::Approx(2.0));  // 2e12 ops in 1 s
  CHECK(tops(1e9, 0) == 0);
  CHECK(speedup(30, 10) == doctest::Approx(3.0));
  CHECK(speedup(30, 0) == 0);
  CHECK(efficiency(7.8, 15.6) == doctest::Approx(0.5));
  CHECK(efficiency(7.8, 0) == 0);
  // The int32 output floor: 8192x8192 int32 is 256 MiB; at 2500 GB/s that is 107 us.
  CHECK(int32_output_bytes({{"m", 8192}, {"n", 8192}, {"k", 64}}) == doctest::Approx(4.0 * 8192 * 8192));
  const nlohmann::json conv = {{"batch", 128}, {"out_channels", 64}, {"out_height", 56}, {"out_width", 56}};
  CHECK(int32_output_bytes(conv) == doctest::Approx(4.0 * 128 * 64 * 56 * 56));
  CHECK(int32_output_bytes(nlohmann::json::object()) == 0);
  CHECK(write_floor_us(4.0 * 8192 * 8192, 2500) == doctest::Approx(4.0 * 8192 * 8192 / 2.5e12 * 1e6));
  CHECK(write_floor_us(1e6, 0) == 0);
}

TEST_CASE("bench: JSON rows carry TOPS, the best vendor, speedup and binary efficiency") {
  Report rep;
  rep.device = "GPU";
  rep.peaks = {16000, 10000};
  const double ops = gemm_ops(1024, 4096, 4096);
  rep.rows.push_back(vendor("1024x4096x4096", "cublaslt-int8", ops, 50));
  rep.rows.push_back(vendor("1024x4096x4096", "cublaslt-fp8", ops, 25));
  Row gone = vendor("1024x4096x4096", "cublaslt-fp16", ops, 1);
  gone.available = false;  // unavailable rows never win
  gone.note = "no algorithm";
  rep.rows.push_back(gone);
  rep.rows.push_back(ours("1024x4096x4096", "w1a2", 1, 2, ops, 20));
  rep.rows.push_back(vendor("64x1024x1024", "cublaslt-int8", gemm_ops(64, 1024, 1024), 5));

  REQUIRE(rep.best_vendor("gemm", "1024x4096x4096") != nullptr);
  CHECK(rep.best_vendor("gemm", "1024x4096x4096")->impl == "cublaslt-fp8");
  CHECK(rep.best_vendor("conv", "1024x4096x4096") == nullptr);

  const nlohmann::json j = rep.row_json(rep.rows[3]);
  CHECK(j.at("impl") == "apnn");
  CHECK(j.at("prec") == "w1a2");
  CHECK(j.at("us").get<double>() == doctest::Approx(20));
  CHECK(j.at("tops").get<double>() == doctest::Approx(ops / 20e-6 / 1e12));
  CHECK(j.at("best_vendor") == "cublaslt-fp8");
  CHECK(j.at("speedup").get<double>() == doctest::Approx(25.0 / 20.0));
  const double binary = ops * 2 / 20e-6 / 1e12;
  CHECK(j.at("binary_tops").get<double>() == doctest::Approx(binary));
  CHECK(j.at("binary_eff_wgmma").get<double>() == doctest::Approx(binary / 16000));
  CHECK(j.at("binary_eff_mma_sync").get<double>() == doctest::Approx(binary / 10000));
  CHECK(j.at("mismatches") == 0);
  CHECK(j.at("checked") == 10);
  CHECK(j.at("int32_out_only_us").get<double>() == 0);  // the output floor not measured
  Row floored = rep.rows[3];
  floored.out_alone = {7.5, 6.0};
  const nlohmann::json f = rep.row_json(floored);
  CHECK(f.at("int32_out_memset_us").get<double>() == doctest::Approx(7.5));
  CHECK(f.at("int32_out_write_kernel_us").get<double>() == doctest::Approx(6.0));
  CHECK(f.at("int32_out_only_us").get<double>() == doctest::Approx(6.0));

  const nlohmann::json v = rep.row_json(rep.rows[2]);
  CHECK(v.at("available") == false);
  CHECK(v.at("note") == "no algorithm");
  CHECK_FALSE(v.contains("us"));
  CHECK_FALSE(rep.row_json(rep.rows[0]).contains("speedup"));

  const nlohmann::json doc = rep.to_json();
  CHECK(doc.at("format") == "apnn-bench-1");
  CHECK(doc.at("rows").size() == rep.rows.size());
  CHECK(doc.at("peaks").at("wgmma_b1_and_tops") == 16000);
  CHECK(doc.at("peaks").at("launch_floor_early_us") == 0);  // not measured
  rep.peaks.launch_floor_us = 3.5;
  rep.peaks.launch_floor_early_us = 2.25;
  rep.peaks.l2_read_gbs = 7000;
  rep.peaks.overlap_wgmma_tops = 15000;
  rep.peaks.overlap_write_gbs = 2300;
  rep.peaks.overlap_read_gbs = 2100;
  const nlohmann::json probe = rep.to_json().at("peaks");
  CHECK(probe.at("launch_floor_us") == 3.5);
  CHECK(probe.at("launch_floor_early_us") == 2.25);
  CHECK(probe.at("l2_read_gbs") == 7000);
  CHECK(probe.at("overlap").at("wgmma_b1_and_tops") == 15000);
  CHECK(probe.at("overlap").at("write_gbs") == 2300);
  CHECK(probe.at("overlap").at("l2_read_gbs") == 2100);

  const auto panels = rep.speedup_panels();
  REQUIRE(panels.size() == 1);
  CHECK(panels[0].groups == std::vector<std::string>{"1024x4096x4096"});
  CHECK(panels[0].series == std::vector<std::string>{"w1a2"});
  CHECK(panels[0].values[0][0] == doctest::Approx(1.25));
}

TEST_CASE("bench: clock samples summarize into mean and minimum clock, mean power and the slowed share") {
  CHECK(summarize({}).samples == 0);
  const ClockStats s = summarize({{1980, 700, true}, {1500, 600, true}, {1800, 500, false}});
  CHECK(s.samples == 3);
  CHECK(s.sm_mhz_mean == doctest::Approx(1760));
  CHECK(s.sm_mhz_min == doctest::Approx(1500));
  CHECK(s.watts_mean == doctest::Approx(600));
  CHECK(s.slowed_share == doctest::Approx(2.0 / 3));
  const nlohmann::json j = clock_json(s);
  CHECK(j.at("samples") == 3);
  CHECK(j.at("sm_mhz_min").get<double>() == doctest::Approx(1500));
  CHECK(j.at("slowed_share").get<double>() == doctest::Approx(2.0 / 3));

  // A row carries its clocks only when they were sampled.
  Report rep;
  Row r = vendor("64x1024x1024", "cublaslt-int8", gemm_ops(64, 1024, 1024), 5);
  CHECK_FALSE(rep.row_json(r).contains("clocks"));
  r.clocks = s;
  CHECK(rep.row_json(r).at("clocks").at("sm_mhz_mean").get<double>() == doctest::Approx(1760));
}

// Waits until pred() holds (a loaded CI machine may schedule the sampler's thread late).
template <class Pred>
bool eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST_CASE("bench: the clock sampler reads its source between start and stop, and keeps no failed reading") {
  std::atomic<int> calls{0};
  ClockSampler sampler(
      [&](GpuSample* g) {
        *g = {1600.0 + (calls++ % 2) * 200, 650, true};
        return true;
      },
      std::chrono::milliseconds(1));
  CHECK(sampler.stop().samples == 0);  // never started
  sampler.start();
  REQUIRE(eventually([&] { return calls.load() >= 3; }));
  const ClockStats s = sampler.stop();
  CHECK(s.samples >= 3);
  CHECK(s.samples == calls.load());  // every reading kept, none after stop()
  CHECK(s.sm_mhz_min == doctest::Approx(1600));
  CHECK(s.sm_mhz_mean >= 1600);
  CHECK(s.sm_mhz_mean <= 1800);
  CHECK(s.slowed_share == doctest::Approx(1.0));
  const int after = calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(calls.load() == after);  // stopped: no more readings

  // A start always takes a reading, even when stop() follows at once; a restart drops the
  // earlier samples.
  sampler.start();
  const ClockStats at_once = sampler.stop();
  CHECK(at_once.samples >= 1);
  CHECK(at_once.samples == calls.load() - after);

  // A source that fails is asked, and contributes no sample.
  std::atomic<int> failed{0};
  ClockSampler failing(
      [&](GpuSample*) {
        ++failed;
        return false;
      },
      std::chrono::milliseconds(1));
  failing.start();
  REQUIRE(eventually([&] { return failed.load() >= 2; }));
  CHECK(failing.stop().samples == 0);
}

// What Report::print_table writes.
std::string table_text(const Report& rep) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  rep.print_table(f);
  std::fclose(f);
  std::string text(buf, len);
  free(buf);
  return text;
}

TEST_CASE("bench: the table has one line per row of ours and names unavailable vendor paths") {
  Report rep;
  const double ops = gemm_ops(64, 128, 128);
  rep.rows.push_back(vendor("64x128x128", "cublaslt-int8", ops, 4));
  Row gone = vendor("64x128x128", "cublaslt-fp8", ops, 0);
  gone.available = false;
  gone.note = "no algorithm for 64x128x128";
  rep.rows.push_back(gone);
  rep.rows.push_back(ours("64x128x128", "w1a1", 1, 1, ops, 2));
  Row bad = ours("64x128x128", "w1a2", 1, 2, ops, 3);
  bad.mismatches = 1;
  rep.rows.push_back(bad);
  const auto lines = lines_of(table_text(rep));
  REQUIRE(lines.size() >= 4);
  CHECK(contains(lines[0], "cublaslt-int8 us"));
  CHECK(contains(lines[1], "w1a1"));
  CHECK(contains(lines[1], "2.00x"));
  CHECK(contains(lines[1], " n/a "));
  CHECK(contains(lines[1], "yes"));
  CHECK(contains(lines[2], "NO"));
  CHECK(contains(lines[3], "no algorithm for 64x128x128"));
  CHECK_FALSE(contains(lines[0], "MHz"));  // not sampled: no clock column

  // With --clocks the rows of ours show their mean SM clock; an unsampled one shows "-".
  rep.rows[2].clocks = summarize({{1754, 600, true}});
  const auto clock_lines = lines_of(table_text(rep));
  REQUIRE(clock_lines.size() >= 3);
  CHECK(contains(clock_lines[0], "MHz"));
  CHECK(contains(clock_lines[1], " 1754 yes"));
  CHECK(contains(clock_lines[2], "    - NO"));
  CHECK_FALSE(contains(clock_lines[0], "out-only us"));  // no output floor measured: no column

  // The measured floor of writing the output alone, where a row of ours has one.
  rep.rows[2].out_alone = {1.25, 0};
  const auto floor_lines = lines_of(table_text(rep));
  REQUIRE(floor_lines.size() >= 3);
  CHECK(contains(floor_lines[0], "ours us     TOPS out-only us"));
  CHECK(contains(floor_lines[1], "        1.25 "));
  CHECK(contains(floor_lines[2], "           - "));
}

TEST_CASE("bench: the SVG chart draws one bar per value, escapes labels, and rises or hangs from 1x") {
  ChartPanel p;
  p.title = "GEMM <H100> & co";
  p.y_label = "speedup";
  p.groups = {"64x128x128", "8192x8192x8192"};
  p.series = {"w1a1", "w1a2", "w2a2"};
  p.values = {{2.0, 0.5, NAN}, {1.0, 4.0, 0.125}};
  const std::string svg = chart_svg({p, p});
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(contains(svg, "</svg>\n"));
  CHECK(count_of(svg, "class=\"bar\"") == 2 * 5);
  CHECK(count_of(svg, "<g class=\"panel\">") == 2);
  CHECK(contains(svg, "GEMM &lt;H100&gt; &amp; co"));
  CHECK_FALSE(contains(svg, "<H100>"));
  CHECK(contains(svg, "8192x8192x8192"));
  CHECK(contains(svg, "1/8x"));  // the axis reaches down to the smallest bar
  CHECK(contains(svg, "4x"));
  CHECK(count_of(svg, "<rect ") == count_of(svg, "</rect>") + 1 + 2 * 3);  // background + legend swatches

  // A 2x bar rises above the baseline and a 0.5x bar hangs below it by the same height.
  const std::regex bar(R"re(class="bar" x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="([0-9.]+)")re");
  std::vector<std::pair<double, double>> bars;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it)
    bars.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  REQUIRE(bars.size() >= 3);
  const double base = bars[0].first + bars[0].second;  // bottom of the 2x bar
  CHECK(bars[1].first == doctest::Approx(base));        // top of the 0.5x bar
  CHECK(bars[1].second == doctest::Approx(bars[0].second));
  CHECK(bars[2].second == doctest::Approx(0.5));        // 1x: a sliver at the baseline
}

TEST_CASE("bench: the peak probes' source names its kernels and instructions") {
  const std::string with = peak_probe_source(true), without = peak_probe_source(false);
  CHECK(contains(with, "extern \"C\" __global__ void __launch_bounds__(256, 1) wgmma_b1_peak"));
  CHECK(contains(with, "wgmma.mma_async.sync.aligned.m64n128k256.s32.b1.b1.and.popc {%0,%1,"));
  CHECK(contains(with, "%63}, %64, %65, p;"));
  CHECK(contains(without, "mma_b1_peak"));
  CHECK(contains(without, "m16n8k256.row.col.s32.b1.b1.s32.and.popc"));
  CHECK_FALSE(contains(without, "wgmma"));
  // The overlap probe: wgmma, stores and bulk reads in one block, each behind its flag.
  CHECK(contains(with, "extern \"C\" __global__ void __launch_bounds__(512, 1) overlap_probe"));
  CHECK(contains(with, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"));
  CHECK(contains(with, "st.global.L2::cache_hint.v4.u32"));  // the GEMM's L2 policies: stores evict_first
  CHECK(contains(with, "complete_tx::bytes.L2::cache_hint"));  // and reads evict_last
  CHECK_FALSE(contains(without, "overlap_probe"));
  // The early-start launch floor lets the next launch go before it waits, as ours do at best.
  const size_t early = with.find("empty_early_launch"), trigger = with.find("griddepcontrol.launch_dependents", early),
               wait = with.find("griddepcontrol.wait", early);
  REQUIRE(early != std::string::npos);
  REQUIRE(trigger != std::string::npos);
  REQUIRE(wait != std::string::npos);
  CHECK(trigger < wait);
  CHECK_FALSE(contains(without, "griddepcontrol"));
  // NVRTC needs no GPU: the probes must compile for the archs that run them.
  GeneratedSource src{"apnn_peak_probe.cu", with, {}, {"mma_b1_peak", "wgmma_b1_peak", "overlap_probe"}};
  CHECK_FALSE(compile_cubin(src, "sm_90a").cubin.empty());
  src.source = without;
  CHECK_FALSE(compile_cubin(src, "sm_80").cubin.empty());
}

TEST_CASE("bench: the output floor's write kernel waits for the previous kernel and compiles for sm_80 and sm_90a") {
  const std::string src_text = output_floor_source();
  // Launched with early start: it must wait before its first store (runtime/module.h).
  const size_t wait = src_text.find("griddepcontrol.wait"), store = src_text.find("] = v;");
  REQUIRE(wait != std::string::npos);
  REQUIRE(store != std::string::npos);
  CHECK(wait < store);
  GeneratedSource src{"apnn_output_floor.cu", src_text, {}, {"write_only"}};
  CHECK_FALSE(compile_cubin(src, "sm_90a").cubin.empty());
  CHECK_FALSE(compile_cubin(src, "sm_80").cubin.empty());

  // The floor is the faster writer; one not measured (0) does not count.
  CHECK(OutputFloor::Result{7.27, 6.5}.us() == doctest::Approx(6.5));
  CHECK(OutputFloor::Result{3.0, 4.0}.us() == doctest::Approx(3.0));
  CHECK(OutputFloor::Result{0, 4.0}.us() == doctest::Approx(4.0));
  CHECK(OutputFloor::Result{}.us() == 0);
}

TEST_CASE("bench: vendor inputs are drawn for every rotation set, never zero") {
  const size_t n = 100;
  for (Element e : {Element::Int8, Element::Fp8E4M3, Element::Fp16}) {
    const std::vector<uint8_t> d = draw_for_sets(e, n, 1);
    CHECK(d.size() == (n + kMaxInputSets * kInputSetShift) * element_bytes(e));
    CHECK(d == draw_for_sets(e, n, 1));  // the seed decides
    for (size_t i = 0; i < d.size() / element_bytes(e); ++i) {
      if (e == Element::Fp16) {
        const uint16_t h = static_cast<uint16_t>(d[2 * i] | d[2 * i + 1] << 8);
        REQUIRE((h & 0x7c00u) == 0x3800u);  // exponent of [0.5, 1)
      } else if (e == Element::Fp8E4M3) {
        REQUIRE((d[i] & 0x78u) == 0x30u);  // exponent of [0.5, 1)
      } else {
        REQUIRE(d[i] != 0);
      }
    }
  }
}
