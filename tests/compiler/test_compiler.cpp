// NVRTC compilation of generated source: cubins for every supported target, arch
// validation, and compile failures that carry the log and a dump of the source.
#include <doctest/doctest.h>

#include "test_util.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apnn/error.h"
#include "apnn/spec.h"
#include "compiler/nvrtc_compiler.h"
#include "generator/generate.h"
#include "engine/tune.h"
#include "spec/kernel_rules.h"

namespace {

namespace fs = std::filesystem;
using apnn::ErrorKind;
using apnn::KernelSpec;


KernelSpec spec_of(const char* json) { return apnn::canonicalize(apnn::parse_spec_text(json, "test")); }

struct Job {
  std::string label;
  KernelSpec spec;
  std::string arch;
  apnn::CompiledCubin out;
  std::string error;
  double wall_ms = 0;
  int spill_bytes_allowed = 0;  // compile_with_ptxas_info: most spill bytes (stores, loads) a kernel may have
};

// Runs the jobs on a few threads (NVRTC programs are independent). The source is generated
// for no arch (the arch-neutral cores) unless `arch_source`: then for the job's arch.
void run_jobs(std::vector<Job>& jobs, int threads, bool arch_source = false) {
  parallel_for(jobs.size(), static_cast<unsigned>(threads), [&](size_t i) {
    Job& j = jobs[i];
    const auto t0 = std::chrono::steady_clock::now();
    try {
      j.out = apnn::compile_cubin(apnn::generate(j.spec, arch_source ? j.arch : ""), j.arch);
    } catch (const std::exception& e) {
      j.error = e.what();
    }
    j.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  });
}

// Compiles the jobs for their arch with ptxas's counts in the log (APNN_PTXAS_INFO) and
// checks that each compiled and that no kernel of it spills (beyond its spill_bytes_allowed).
void compile_with_ptxas_info(std::vector<Job>& jobs) {
  setenv("APNN_PTXAS_INFO", "1", 1);
  run_jobs(jobs, 4, /*arch_source=*/true);
  unsetenv("APNN_PTXAS_INFO");
  const std::regex spills(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  for (const Job& j : jobs) {
    INFO(j.label);
    REQUIRE(j.error.empty());
    int kernels = 0;
    for (std::sregex_iterator m(j.out.log.begin(), j.out.log.end(), spills), end; m != end; ++m, ++kernels) {
      CHECK(std::stoi((*m)[1]) <= j.spill_bytes_allowed);
      CHECK(std::stoi((*m)[2]) <= j.spill_bytes_allowed);
    }
    CHECK(kernels >= 1);  // ptxas reported on the module's kernels
  }
}

template <class T>
T read_le(const std::vector<char>& b, size_t off) {
  T v{};
  std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

// Scoped TMPDIR pointing at a fresh directory, removed afterwards.
class TempTmpdir {
 public:
  TempTmpdir() {
    const char* old = std::getenv("TMPDIR");
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv("TMPDIR", dir_.c_str(), 1);
  }
  ~TempTmpdir() {
    if (had_)
      ::setenv("TMPDIR", old_.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
  }
  const fs::path& dir() const { return dir_; }

 private:
  ScratchDir scratch_{"apnn-compiler-test"};
  const fs::path& dir_ = scratch_.path();
  bool had_ = false;
  std::string old_;
};

apnn::Error compile_error(const apnn::GeneratedSource& src, const std::string& arch) {
  try {
    apnn::compile_cubin(src, arch);
  } catch (const apnn::Error& e) {
    return e;
  }
  FAIL("compile_cubin did not throw for arch '" << arch << "'");
  return apnn::Error(ErrorKind::Io, "unreachable");
}

}  // namespace

TEST_CASE("compiler: representative specs compile to sm_80/86/89/90a cubins") {
  const std::vector<std::pair<std::string, KernelSpec>> specs = {
      {"w1a2 pm1/unsigned default", spec_of(R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"})")},
      {"w1a1 unsigned", spec_of(R"({"op":"apmm","w_bits":1,"w_enc":"unsigned","x_bits":1,"x_enc":"unsigned"})")},
      {"w2a2 signed/pm1", spec_of(R"({"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"pm1"})")},
      {"w8a8 signed/pm1", spec_of(R"({"op":"apmm","w_bits":8,"w_enc":"signed","x_bits":8,"x_enc":"pm1"})")},
      {"bk256 stages2", spec_of(R"({"op":"apmm","w_bits":2,"w_enc":"unsigned","x_bits":4,"x_enc":"signed",
                                    "tile":{"bm":32,"bn":64,"bk":256,"stages":2,"warps_m":2,"warps_n":2}})")},
      {"bk1024 stages4", spec_of(R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":3,"x_enc":"unsigned",
                                     "tile":{"bm":128,"bn":64,"bk":1024,"stages":4,"warps_m":4,"warps_n":2}})")},
  };
  const std::vector<std::string> archs = {"sm_80", "sm_86", "sm_89", "sm_90a"};
  std::vector<Job> jobs;
  for (const auto& [label, spec] : specs)
    for (const auto& arch : archs) jobs.push_back({label, spec, arch, {}, {}, 0});
  // APConv modules (their own template and five entry points).
  const KernelSpec conv3 = spec_of(R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"pad":[1,1]})");
  const KernelSpec conv1 = spec_of(R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":4,"x_enc":"signed","kernel":[1,1],"stride":[2,2]})");
  for (const char* arch : {"sm_80", "sm_90a"}) {
    jobs.push_back({"apconv 3x3 pad 1", conv3, arch, {}, {}, 0});
    jobs.push_back({"apconv 1x1 stride 2", conv1, arch, {}, {}, 0});
  }
  // Every encoding pair once, alternating sm_80 and plain sm_90 (keeps the suite fast).
  const char* encs[] = {"unsigned", "pm1", "signed"};
  int pair = 0;
  for (const char* we : encs)
    for (const char* xe : encs) {
      const std::string text = std::string(R"({"op":"apmm","w_bits":3,"w_enc":")") + we + R"(","x_bits":4,"x_enc":")" + xe + "\"}";
      jobs.push_back({std::string("w3a4 ") + we + "/" + xe, spec_of(text.c_str()), pair++ % 2 ? "sm_90" : "sm_80", {}, {}, 0});
    }
  const auto t0 = std::chrono::steady_clock::now();
  run_jobs(jobs, 2);
  MESSAGE(jobs.size() << " NVRTC compiles in "
                      << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");

  for (const Job& j : jobs) {
    INFO(j.label << " @ " << j.arch << " (" << apnn::canonical_json(j.spec) << ")");
    REQUIRE_MESSAGE(j.error.empty(), j.error);
    const std::vector<char>& c = j.out.cubin;
    REQUIRE(c.size() > 64);
    // ELF64, little-endian, EM_CUDA.
    CHECK(std::memcmp(c.data(), "\x7f" "ELF", 4) == 0);
    CHECK(c[4] == 2);
    CHECK(c[5] == 1);
    CHECK(read_le<uint16_t>(c, 18) == 190);
    // The target SM is recorded in e_flags: bits 8..15 since CUDA 13's ELF ABI 8, bits 0..7 before.
    const uint32_t flags = read_le<uint32_t>(c, 48);
    const uint32_t sm = static_cast<uint32_t>(std::stoi(j.arch.substr(3, 2)));
    CHECK_MESSAGE((((flags >> 8) & 0xff) == sm || (flags & 0xff) == sm), "e_flags 0x" << std::hex << flags);
    // The kernels' symbols are in the binary.
    const std::string bytes(c.begin(), c.end());
    for (const auto& k : apnn::generate(j.spec).kernels) CHECK(contains(bytes, k));
    CHECK(j.out.ms > 0);
  }
  // Different targets give different binaries.
  for (size_t i = 0; i + 1 < jobs.size(); ++i)
    if (jobs[i].label == jobs[i + 1].label && jobs[i].arch != jobs[i + 1].arch)
      CHECK(jobs[i].out.cubin != jobs[i + 1].out.cubin);
}

TEST_CASE("compiler: the sm_90a wgmma core compiles for its tiles of every bit width") {
  std::vector<Job> jobs;
  const char* specs[] = {
      R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":1,"x_enc":"pm1"})",
      R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"})",
      R"({"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned"})",
      R"({"op":"apmm","w_bits":4,"w_enc":"unsigned","x_bits":4,"x_enc":"pm1"})",
      R"({"op":"apmm","w_bits":8,"w_enc":"signed","x_bits":8,"x_enc":"signed"})",
  };
  for (const char* text : specs) {
    KernelSpec s = spec_of(text);
    apnn::Tile t;
    REQUIRE(apnn::rules::wgmma_tile(&t, s.w, s.x));
    s.tile = t;
    jobs.push_back({text, s, "sm_90a", {}, {}, 0});
  }
  KernelSpec bk256 = spec_of(R"({"op":"apmm","w_bits":1,"w_enc":"unsigned","x_bits":3,"x_enc":"signed",
                                 "tile":{"bm":64,"bn":64,"bk":256,"stages":2,"warps_m":4,"warps_n":2}})");
  jobs.push_back({"bk256 64x64 one warpgroup along M, two along N", bk256, "sm_90a", {}, {}, 0});
  KernelSpec bk512 = spec_of(R"({"op":"apmm","w_bits":2,"w_enc":"pm1","x_bits":1,"x_enc":"pm1",
                                 "tile":{"bm":128,"bn":64,"bk":512,"stages":3,"warps_m":8,"warps_n":2}})");
  jobs.push_back({"bk512 128x64 four warpgroups (2 x 2)", bk512, "sm_90a", {}, {}, 0});
  // APConv on the wgmma core: the gather plan in the core's swizzle, one tile per block.
  KernelSpec conv3 = spec_of(R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],
                                 "stride":[1,1],"pad":[1,1],"tile":{"bm":64,"bn":8,"bk":1024,"stages":3,"warps_m":4,"warps_n":1}})");
  jobs.push_back({"conv 3x3/1 64x8/1024, narrowest wgmma N", conv3, "sm_90a", {}, {}, 0});
  KernelSpec conv1 = spec_of(R"({"op":"apconv","w_bits":2,"w_enc":"pm1","x_bits":4,"x_enc":"pm1","kernel":[1,1],
                                 "stride":[2,2],"pad":[0,0],"tile":{"bm":128,"bn":32,"bk":256,"stages":4,"warps_m":8,"warps_n":2}})");
  jobs.push_back({"conv 1x1/2 128x32/256, both offsets", conv1, "sm_90a", {}, {}, 0});
  // The TMA core (tile.cluster 2): the X tile shared (w1a1 128x256), the W tile shared (w2a2 128x64).
  KernelSpec tma_x = spec_of(R"({"op":"apmm","w_bits":1,"w_enc":"unsigned","x_bits":1,"x_enc":"unsigned",
                                 "tile":{"bm":128,"bn":256,"bk":1024,"stages":4,"warps_m":8,"warps_n":1,"cluster":2}})");
  jobs.push_back({"TMA core, cluster sharing X", tma_x, "sm_90a", {}, {}, 0});
  KernelSpec tma_w = spec_of(R"({"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"pm1",
                                 "tile":{"bm":128,"bn":64,"bk":1024,"stages":4,"warps_m":8,"warps_n":1,"cluster":2}})");
  jobs.push_back({"TMA core, cluster sharing W", tma_w, "sm_90a", {}, {}, 0});
  // How each of these issues its wgmmas, checked in the generated Traits.
  // - A from registers (kRegA) where the wgmmas (after stacking) are 32 columns or fewer,
  //   several per W fragment and 4 or more a K slice: on the TMA core here (two warpgroups
  //   along N: no stacked X planes), on the cp.async core in the w4a4 and w8a8 default tiles
  //   (merged sets) and conv1 above.
  // - X planes stacked into one wgmma (rules::wgmma_x_stack): w2a4's 4 planes of 32 columns
  //   on the TMA core, w4a4's with one set per plane pair on the cp.async core, and stacks of
  //   3 and 5 planes: wgmma N of 96 (w2a3 128x32, TMA core), 192 (w1a3 128x64 on the cp.async
  //   core) and 80 (w2a5 128x16).
  const struct { const char* label; const char* spec; std::vector<const char*> traits; } issued[] = {
      {"TMA core, A from registers",
       R"({"op":"apmm","w_bits":4,"w_enc":"signed","x_bits":4,"x_enc":"unsigned",
           "tile":{"bm":64,"bn":32,"bk":1024,"stages":3,"warps_m":4,"warps_n":2,"cluster":2}})",
       {"kXStack = 1;"}},
      {"TMA core, 4 X planes a wgmma",
       R"({"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":4,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":32,"bk":1024,"stages":4,"warps_m":8,"warps_n":1,"cluster":2}})",
       {"kXStack = 4;"}},
      {"cp.async core, a set per plane pair, 4 X planes a wgmma",
       R"({"op":"apmm","w_bits":4,"w_enc":"signed","x_bits":4,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":16,"bk":512,"stages":4,"warps_m":8,"warps_n":1}})",
       {"kGroups = 16;", "kXStack = 4;"}},
      {"TMA core, 96-column wgmmas",
       R"({"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":3,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":32,"bk":1024,"stages":4,"warps_m":8,"warps_n":1,"cluster":2}})",
       {"kXStack = 3;"}},
      {"cp.async core, 192-column wgmmas",
       R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":3,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":64,"bk":1024,"stages":4,"warps_m":8,"warps_n":1}})",
       {"kXStack = 3;"}},
      {"cp.async core, 80-column wgmmas",
       R"({"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":5,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":16,"bk":512,"stages":3,"warps_m":8,"warps_n":1}})",
       {"kXStack = 5;"}},
  };
  for (const auto& c : issued) {
    const KernelSpec s = spec_of(c.spec);
    jobs.push_back({c.label, s, "sm_90a", {}, {}, 0});
    const std::string source = apnn::generate(s, "sm_90a").source;
    for (const char* want : c.traits) CHECK_MESSAGE(contains(source, want), c.label << ": " << want);
  }
  parallel_for(jobs.size(), 2, [&](size_t i) {
    try {
      const apnn::GeneratedSource src = apnn::generate(jobs[i].spec, "sm_90a");
      if (!contains(src.source, "apmm_sm90a<Traits>") && !contains(src.source, "conv_sm90a<Traits>") &&
          !contains(src.source, "apmm_sm90a_tma<Traits>"))
        throw std::runtime_error("generated the mma.sync core");
      jobs[i].out = apnn::compile_cubin(src, "sm_90a");
    } catch (const std::exception& e) {
      jobs[i].error = e.what();
    }
  });
  for (const Job& j : jobs) {
    INFO(j.label << " (" << apnn::canonical_json(j.spec) << ")");
    CHECK_MESSAGE(j.error.empty(), j.error);
    CHECK(j.out.cubin.size() > 64);
  }
}

TEST_CASE("compiler: folded TMA tiles compile without spills or serialized wgmmas") {
  // rules::folds_sets: one result set, a W plane's temporary of all q planes (one wgmma)
  // folded each K step. ptxas serialized the wgmmas (C7514) when a second temporary was folded
  // while the next plane's wgmmas ran (session 37); the untuned w4a4 128x64 tile, w4a2
  // 128x128 (192 accumulators) and w4a8 128x32, w5a5 128x32 (N = 160), and w8a8 128x32 with
  // 512-bit steps (the 64-byte swizzle), with their traits.
  const struct { const char* label; const char* spec; std::vector<const char*> traits; } folded[] = {
      {"w4a4 128x64",
       R"({"op":"apmm","w_bits":4,"w_enc":"signed","x_bits":4,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":64,"bk":1024,"stages":2,"warps_m":8,"warps_n":1,"cluster":2}})",
       {"kGroups = 1;", "kXStack = 4;", "kFold = true;", "kProducerWarps = 4;"}},
      {"w4a2 128x128",
       R"({"op":"apmm","w_bits":4,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":128,"bk":1024,"stages":2,"warps_m":8,"warps_n":1,"cluster":2}})",
       {"kGroups = 1;", "kXStack = 2;", "kFold = true;"}},
      {"w4a8 128x32",
       R"({"op":"apmm","w_bits":4,"w_enc":"signed","x_bits":8,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":32,"bk":1024,"stages":2,"warps_m":8,"warps_n":1,"cluster":2}})",
       {"kXStack = 8;", "kFold = true;"}},
      {"w5a5 128x32 (N = 160)",
       R"({"op":"apmm","w_bits":5,"w_enc":"signed","x_bits":5,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":32,"bk":1024,"stages":2,"warps_m":8,"warps_n":1,"cluster":2}})",
       {"kXStack = 5;", "kFold = true;"}},
      {"w8a8 128x32/512",
       R"({"op":"apmm","w_bits":8,"w_enc":"signed","x_bits":8,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":32,"bk":512,"stages":2,"warps_m":8,"warps_n":1,"cluster":2}})",
       {"kXStack = 8;", "kFold = true;", "kBK = 512;"}},
  };
  std::vector<Job> jobs;
  for (const auto& c : folded) {
    const KernelSpec s = spec_of(c.spec);
    const std::string source = apnn::generate(s, "sm_90a").source;
    for (const char* want : c.traits) CHECK_MESSAGE(contains(source, want), c.label << ": " << want);
    jobs.push_back({c.label, s, "sm_90a", {}, {}, 0});
  }
  compile_with_ptxas_info(jobs);
  for (const Job& j : jobs) {
    INFO(j.label);
    CHECK(j.out.log.find("C7514") == std::string::npos);
    CHECK(j.out.log.find("C7519") == std::string::npos);
    CHECK(j.out.log.find("C7520") == std::string::npos);
  }
  // A tile whose sets fit in rules::kTmaFoldAboveRegs (or stack) keeps them: no fold.
  CHECK(contains(apnn::generate(spec_of(R"({"op":"apmm","w_bits":4,"w_enc":"signed","x_bits":4,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":16,"bk":1024,"stages":3,"warps_m":8,"warps_n":1,"cluster":2}})"), "sm_90a").source,
                 "kFold = false;"));
}

TEST_CASE("compiler: unstacked sets above 96 registers compile without spills on a producer warpgroup") {
  // rules::kTmaOneWarpUnstackedRegs: with one producer warp (168 registers a thread) ptxas
  // spilled 32-224 bytes of these untuned cluster tiles (session 39); the producer warpgroup
  // gives the consumers 232.
  const struct { const char* label; const char* spec; } tiles[] = {
      {"unsigned w4a5 128x32",
       R"({"op":"apmm","w_bits":4,"w_enc":"unsigned","x_bits":5,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":32,"bk":512,"stages":4,"warps_m":8,"warps_n":1,"cluster":2}})"},
      {"unsigned w7a2 128x32",
       R"({"op":"apmm","w_bits":7,"w_enc":"unsigned","x_bits":2,"x_enc":"unsigned",
           "tile":{"bm":128,"bn":32,"bk":512,"stages":3,"warps_m":8,"warps_n":1,"cluster":2}})"},
      {"signed w8a3 x signed 128x16",
       R"({"op":"apmm","w_bits":8,"w_enc":"signed","x_bits":3,"x_enc":"signed",
           "tile":{"bm":128,"bn":16,"bk":512,"stages":3,"warps_m":8,"warps_n":1,"cluster":2}})"},
      {"unsigned w7a4 x signed 128x16, int16",
       R"({"op":"apmm","w_bits":7,"w_enc":"unsigned","x_bits":4,"x_enc":"signed","output":"int16",
           "tile":{"bm":128,"bn":16,"bk":512,"stages":3,"warps_m":8,"warps_n":1,"cluster":2}})"},
  };
  std::vector<Job> jobs;
  for (const auto& c : tiles) {
    const KernelSpec s = spec_of(c.spec);
    CHECK_MESSAGE(contains(apnn::generate(s, "sm_90a").source, "kProducerWarps = 4;"), c.label);
    jobs.push_back({c.label, s, "sm_90a", {}, {}, 0});
  }
  compile_with_ptxas_info(jobs);
}

TEST_CASE("compiler: the untuned tiles of quantize chains compile without spills") {
  // The fused quantized store (epilogue.cuh) holds a thread's codes, thresholds and, on APMM's
  // threshold path, every column's term at once: session 42's first form spilled 128-308 bytes
  // on tiles like these (its review). The cp.async tiles the untuned rule gives APMM chains at
  // 8192x4096^2 (128x128 8x2), 1024^3 (128x64 8x1) and a batch-8 FC layer (128x8 8x1), for pm1
  // weights (column terms) with 1-, 2-, 3-bit codes (thresholds) and a 4-bit one (float path),
  // and signed weights; and the TMA core's 128x96 cluster tile that w2a2 quantize chains take
  // from 7 tiles a block (session 46), its 168 registers a thread mostly accumulators (not
  // with 3-bit codes, which spill there: untuned_apmm_tile.cpp). There the 4-bit chain (float
  // path) spills 16 / 20 bytes, one register, since its rows' parameters are held for the
  // whole store (generator 63); measured faster still than 128x64 without a spill (session 47:
  // 47.8-53.6 vs 50.9-55.4 us at 2688-3072x4096x1024, 135 vs 143 us at 8192x4096x1024), so
  // that much is allowed and no more.
  const char* const tiles[][2] = {
      {R"("w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned")", R"({"bm":128,"bn":128,"bk":1024,"stages":4,"warps_m":8,"warps_n":2})"},
      {R"("w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned")", R"({"bm":128,"bn":64,"bk":1024,"stages":4,"warps_m":8,"warps_n":1})"},
      {R"("w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned")", R"({"bm":128,"bn":8,"bk":1024,"stages":4,"warps_m":8,"warps_n":1})"},
      {R"("w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned")", R"({"bm":128,"bn":64,"bk":1024,"stages":4,"warps_m":8,"warps_n":1})"},
      {R"("w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned")", R"({"bm":128,"bn":96,"bk":1024,"stages":3,"warps_m":8,"warps_n":1,"cluster":2})"},
  };
  const char* const chains[] = {
      R"([{"op":"scale_bias"},{"op":"quantize","bits":1,"enc":"pm1"}])",
      R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"signed","scale":"per_channel"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])",
  };
  std::vector<Job> jobs;
  for (const auto& t : tiles)
    for (const char* c : chains) {
      if (std::strstr(t[1], "cluster") && std::strstr(c, R"("bits":3)")) continue;
      const std::string json = std::string(R"({"op":"apmm",)") + t[0] + R"(,"epilogue":)" + c + R"(,"tile":)" + t[1] + "}";
      jobs.push_back({json, spec_of(json.c_str()), "sm_90a", {}, {}, 0});
      if (std::strstr(t[1], "cluster") && std::strstr(c, R"("bits":4)")) jobs.back().spill_bytes_allowed = 20;
    }
  compile_with_ptxas_info(jobs);
  MESSAGE(jobs.size() << " quantize-chain kernels, none spills past its allowance");
}

TEST_CASE("compiler: quantize chains compile on the TMA core, codes within the launched shared memory") {
  // The generated static_assert holds GemmSm90aTma::kSmemBytes (the codes after the barriers)
  // to rules::core_shared_bytes. (The w1a2 kernel spills 48 bytes at 168 registers, 88 before
  // session 42's quantized store; the untuned tile of a chain stays on the cp.async core.)
  std::vector<Job> jobs = {
      {"w1a2 128x128 q2", spec_of(R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",
           "epilogue":[{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}],
           "tile":{"bm":128,"bn":128,"bk":1024,"stages":3,"warps_m":8,"warps_n":1,"cluster":2}})"), "sm_90a", {}, {}, 0},
      {"signed w8a3 x signed 128x16 q2", spec_of(R"({"op":"apmm","w_bits":8,"w_enc":"signed","x_bits":3,"x_enc":"signed",
           "epilogue":[{"op":"scale_bias"},{"op":"quantize","bits":2,"enc":"unsigned"}],
           "tile":{"bm":128,"bn":16,"bk":512,"stages":3,"warps_m":8,"warps_n":1,"cluster":2}})"), "sm_90a", {}, {}, 0},
  };
  run_jobs(jobs, 2, /*arch_source=*/true);
  for (const Job& j : jobs) {
    INFO(j.label);
    CHECK(j.error.empty());
    CHECK(contains(apnn::generate(j.spec, "sm_90a").source, "apnn::apmm_sm90a_tma<Traits>("));
    CHECK(apnn::rules::core_shared_bytes(j.spec, true) == apnn::rules::tma_spec_shared_bytes(*j.spec.tile, j.spec));
  }
}

TEST_CASE("compiler: supported targets and options") {
  const std::vector<std::string> expect = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};
  CHECK(apnn::supported_archs() == expect);
  for (const auto& a : expect) {
    CHECK(apnn::is_supported_arch(a));
    CHECK_NOTHROW(apnn::check_arch(a));
    const auto opts = apnn::compile_options(a);
    CHECK(std::find(opts.begin(), opts.end(), "--gpu-architecture=" + a) != opts.end());
  }
  CHECK(std::regex_match(apnn::nvrtc_version(), std::regex(R"(\d+\.\d+)")));
  CHECK(apnn::nvrtc_version() != "0.0");
  // APNN_LINEINFO adds line tables for the profiler, APNN_TIMELINE the TMA core's phase
  // timestamps (templates/timeline.cuh), APNN_PTXAS_INFO ptxas's counts in the log; "0" and
  // unset do not.
  for (const auto& [var, option] : {std::pair<const char*, std::string>{"APNN_LINEINFO", "--generate-line-info"},
                                    {"APNN_TIMELINE", "-DAPNN_TIMELINE=1"},
                                    {"APNN_PTXAS_INFO", "--ptxas-options=-v"}}) {
    INFO(var);
    auto has_option = [&option = option] {
      const auto o = apnn::compile_options("sm_90a");
      return std::find(o.begin(), o.end(), option) != o.end();
    };
    unsetenv(var);
    CHECK_FALSE(has_option());
    setenv(var, "0", 1);
    CHECK_FALSE(has_option());
    setenv(var, "1", 1);
    CHECK(has_option());
    unsetenv(var);
  }
}

TEST_CASE("compiler: every conv tile of three blocks per SM compiles without spills") {
  // rules::conv_three_blocks caps such kernels at 80 registers a thread; ptxas spilled there
  // for kernels the rule now leaves at two (pm1 activations, 2-3 stages, other precisions).
  std::vector<Job> jobs;
  for (const char* w_enc : {"unsigned", "pm1", "signed"})
    for (int stride : {1, 2}) {
      const KernelSpec base = spec_of(fmt::format(R"({{"op":"apconv","w_bits":1,"w_enc":"{}","x_bits":2,"x_enc":"unsigned",
                                                      "kernel":[3,3],"stride":[{},{}],"pad":[1,1]}})",
                                                  w_enc, stride, stride)
                                          .c_str());
      for (const apnn::Tile& t : apnn::legal_tiles(base, "sm_90a", apnn::rules::kMaxSharedBytes)) {
        KernelSpec k = base;
        k.tile = t;
        k = apnn::canonicalize(k);
        const auto groups = apnn::rules::kernel_plane_groups(k, "sm_90a");
        if (apnn::rules::conv_min_blocks(k, "sm_90a", static_cast<int>(groups.weight.size())) != 3) continue;
        jobs.push_back({fmt::format("w1({})a2 s{} {}x{}/{} st{}", w_enc, stride, t.bm, t.bn, t.bk, t.stages), k, "sm_90a", {}, {}, 0});
      }
    }
  REQUIRE(jobs.size() >= 2);  // at least 128x64/512 with 4 stages, both strides
  compile_with_ptxas_info(jobs);
  for (const Job& j : jobs) {
    INFO(j.label);
    CHECK(apnn::generate(j.spec, "sm_90a").source.find("__launch_bounds__(kThreads, 3)") != std::string::npos);
  }
  MESSAGE(jobs.size() << " three-block conv kernels, none spills");
}

TEST_CASE("compiler: the halo core compiles without spills or fenced wgmmas for its strides and precisions") {
  // ptxas fenced the accumulators between wgmmas (C7519) while the k256 slices a position were
  // a run-time count, and serializes wgmmas it cannot prove uniform (C7520).
  std::vector<Job> jobs;
  // Three carry chains: the network's bn+relu+q2 (codes by thresholds), a 4-bit quantize (the
  // float ops) and a float output. The last two are 1x1 kernels (ResNet-18's stride-2
  // shortcuts: the untuned w1a2 tile, and w2a2 with the network's chain).
  const char* q2 = R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])";
  const char* q4 = R"([{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])";
  struct Case { const char* w; const char* x; int stride, bn, stages; const char* chain; int kernel = 3; };
  const Case cases[] = {
      {R"("w_bits":1,"w_enc":"pm1")", R"("x_bits":2,"x_enc":"unsigned")", 1, 112, 4, "[]"},
      {R"("w_bits":1,"w_enc":"pm1")", R"("x_bits":2,"x_enc":"unsigned")", 2, 64, 2, "[]"},
      {R"("w_bits":2,"w_enc":"signed")", R"("x_bits":2,"x_enc":"unsigned")", 1, 64, 3, "[]"},
      {R"("w_bits":1,"w_enc":"unsigned")", R"("x_bits":4,"x_enc":"unsigned")", 2, 48, 2, "[]"},
      {R"("w_bits":1,"w_enc":"pm1")", R"("x_bits":2,"x_enc":"pm1")", 1, 16, 8, "[]"},
      {R"("w_bits":1,"w_enc":"pm1")", R"("x_bits":2,"x_enc":"unsigned")", 1, 112, 4, q2},
      {R"("w_bits":1,"w_enc":"pm1")", R"("x_bits":2,"x_enc":"unsigned")", 2, 64, 2, q4},
      {R"("w_bits":2,"w_enc":"signed")", R"("x_bits":2,"x_enc":"unsigned")", 1, 64, 3,
       R"([{"op":"scale_bias"},{"op":"relu"}])"},
      {R"("w_bits":1,"w_enc":"pm1")", R"("x_bits":2,"x_enc":"unsigned")", 2, 112, 4, "[]", 1},
      {R"("w_bits":2,"w_enc":"signed")", R"("x_bits":2,"x_enc":"unsigned")", 2, 64, 4, q2, 1}};
  for (const auto& c : cases)
    jobs.push_back({fmt::format("{} {} {}x{} s{} bn{} st{} {}", c.w, c.x, c.kernel, c.kernel, c.stride, c.bn, c.stages,
                                c.chain),
                    spec_of(fmt::format(R"({{"op":"apconv",{},{},"kernel":[{},{}],"stride":[{},{}],"pad":[{},{}],
                                            "epilogue":{},
                                            "tile":{{"bm":128,"bn":{},"bk":256,"stages":{},"core":"halo"}}}})",
                                        c.w, c.x, c.kernel, c.kernel, c.stride, c.stride, c.kernel / 2, c.kernel / 2,
                                        c.chain, c.bn, c.stages)
                                .c_str()),
                    "sm_90a", {}, {}, 0});
  compile_with_ptxas_info(jobs);
  for (const Job& j : jobs) {
    INFO(j.label);
    CHECK(j.out.log.find("C7519") == std::string::npos);
    CHECK(j.out.log.find("C7520") == std::string::npos);
  }
  MESSAGE(jobs.size() << " halo-core kernels, none spills");
}

TEST_CASE("compiler: APNN_TIMELINE puts the timeline's variables in a TMA-core cubin, and only then") {
  const apnn::GeneratedSource src = apnn::generate(
      spec_of(R"({"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned",
                  "tile":{"bm":128,"bn":64,"bk":1024,"stages":4,"warps_m":8,"warps_n":1,"cluster":2}})"),
      "sm_90a");
  auto has_symbol = [](const std::vector<char>& cubin, const std::string& name) {
    return std::search(cubin.begin(), cubin.end(), name.begin(), name.end()) != cubin.end();
  };
  unsetenv("APNN_TIMELINE");
  const apnn::CompiledCubin plain = apnn::compile_cubin(src, "sm_90a");
  CHECK_FALSE(has_symbol(plain.cubin, "apnn_timeline"));
  setenv("APNN_TIMELINE", "1", 1);
  const apnn::CompiledCubin timed = apnn::compile_cubin(src, "sm_90a");
  unsetenv("APNN_TIMELINE");
  for (const char* name : {"apnn_timeline", "apnn_timeline_capacity", "apnn_timeline_count"})
    CHECK_MESSAGE(has_symbol(timed.cubin, name), name);
}

TEST_CASE("compiler: an unsupported arch is InvalidInput naming it and the allowed ones") {
  const apnn::GeneratedSource src = apnn::generate(spec_of(R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":1,"x_enc":"pm1"})"));
  for (const std::string arch : {"sm_75", "compute_90", "", "SM_80", "sm_80 ", "sm_90a;", "sm_100"}) {
    INFO("arch '" << arch << "'");
    CHECK_FALSE(apnn::is_supported_arch(arch));
    for (int via_compile = 0; via_compile < 2; ++via_compile) {
      std::string msg;
      ErrorKind kind = ErrorKind::Io;
      bool thrown = false;
      try {
        if (via_compile)
          apnn::compile_cubin(src, arch);
        else
          apnn::check_arch(arch);
      } catch (const apnn::Error& e) {
        thrown = true;
        kind = e.kind();
        msg = e.what();
      }
      INFO(msg);
      REQUIRE(thrown);
      CHECK(kind == ErrorKind::InvalidInput);
      CHECK(contains(msg, "'" + arch + "'"));
      CHECK(contains(msg, "sm_80, sm_86, sm_89, sm_90, sm_90a"));
    }
  }
}

TEST_CASE("compiler: a syntax error is a Compile error with NVRTC's log and a dump of the source") {
  TempTmpdir tmp;
  apnn::GeneratedSource bad;
  bad.name = "broken_kernel.cu";
  bad.source =
      "#include \"helper.cuh\"\n"
      "extern \"C\" __global__ void apnn_broken(int* y) {\n"
      "  int v = helper(3) +;\n"
      "  y[0] = v;\n"
      "}\n";
  bad.headers = {{"helper.cuh", "#pragma once\n__device__ int helper(int v) { return v * 2; }\n"}};
  bad.kernels = {"apnn_broken"};

  const apnn::Error e = compile_error(bad, "sm_80");
  const std::string msg = e.what();
  INFO(msg);
  CHECK(e.kind() == ErrorKind::Compile);
  CHECK(contains(msg, "broken_kernel.cu"));
  CHECK(contains(msg, "sm_80"));
  // NVRTC's log: the file, the line and the diagnosis.
  CHECK(contains(msg, "broken_kernel.cu(3)"));
  CHECK(contains(msg, "error"));
  CHECK(contains(msg, "expected an expression"));

  std::smatch m;
  REQUIRE(std::regex_search(msg, m, std::regex(R"(source dumped to (\S+))")));
  const fs::path dumped = m[1].str();
  CHECK(fs::is_regular_file(dumped));
  CHECK(read_file(dumped) == bad.source);
  CHECK(dumped.filename() == "broken_kernel.cu");
  // It honours TMPDIR, and the headers are next to it so the failure reproduces with nvcc.
  CHECK(dumped.parent_path().parent_path() == tmp.dir());
  CHECK(read_file(dumped.parent_path() / "helper.cuh") == bad.headers[0].second);
}

TEST_CASE("compiler: an error inside a header and a missing header are Compile errors") {
  TempTmpdir tmp;
  apnn::GeneratedSource bad;
  bad.name = "uses_header.cu";
  bad.source = "#include \"bad.cuh\"\nextern \"C\" __global__ void k(int* y) { y[0] = f(); }\n";
  bad.headers = {{"bad.cuh", "__device__ int f() { return undeclared_name; }\n"}};
  apnn::Error e = compile_error(bad, "sm_90a");
  CHECK(e.kind() == ErrorKind::Compile);
  CHECK(contains(e.what(), "undeclared_name"));
  CHECK(contains(e.what(), "bad.cuh"));

  bad.headers.clear();
  e = compile_error(bad, "sm_86");
  CHECK(e.kind() == ErrorKind::Compile);
  CHECK(contains(e.what(), "bad.cuh"));
  CHECK(contains(e.what(), "source dumped to "));
}

TEST_CASE("compiler: the int16 output compiles without spills on every APMM and APConv core") {
  // The cp.async wgmma core staging 64-column boxes in a pipeline slot (128x256/1024 8x1, with
  // and without pm1 weights' column terms); the TMA tiles: whole-tile staging (128x128: 32 KB
  // of int16 beside 4 stages), and 96 columns a warpgroup (64x192 4x2, 128x96: not whole
  // 64-column int16 boxes, plain stores). The two-box staging of 128x192 is checked below.
  const struct { const char* prec; const char* tile; const char* arch; } cases[] = {
      {R"("w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned")", R"({"bm":64,"bn":64,"bk":512})", "sm_80"},
      {R"("w_bits":1,"w_enc":"unsigned","x_bits":1,"x_enc":"unsigned")", R"({"bm":128,"bn":256,"bk":512})", "sm_90a"},
      {R"("w_bits":1,"w_enc":"unsigned","x_bits":1,"x_enc":"unsigned")", R"({"bm":128,"bn":256,"bk":1024,"stages":3,"warps_m":8,"warps_n":1})", "sm_90a"},
      {R"("w_bits":1,"w_enc":"pm1","x_bits":1,"x_enc":"unsigned")", R"({"bm":128,"bn":256,"bk":1024,"stages":3,"warps_m":8,"warps_n":1})", "sm_90a"},
      {R"("w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned")", R"({"bm":128,"bn":128,"bk":1024,"stages":4,"cluster":2})", "sm_90a"},
      {R"("w_bits":2,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned")", R"({"bm":64,"bn":192,"bk":1024,"stages":3,"warps_m":4,"warps_n":2,"cluster":2})", "sm_90a"},
      {R"("w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned")", R"({"bm":128,"bn":96,"bk":1024,"stages":3,"cluster":2})", "sm_90a"}};
  std::vector<Job> jobs;
  for (const auto& c : cases)
    jobs.push_back({fmt::format("{} {} {}", c.prec, c.tile, c.arch),
                    spec_of(fmt::format(R"({{"op":"apmm",{},"output":"int16","tile":{}}})", c.prec, c.tile).c_str()),
                    c.arch, {}, {}, 0});
  // The conv cores: halo (strides 1 and 2), wgmma (3x3, 1x1/2) and mma.sync.
  const struct { const char* conv; const char* tile; const char* arch; } convs[] = {
      {R"("kernel":[3,3],"stride":[1,1],"pad":[1,1])", R"({"bm":128,"bn":112,"bk":256,"stages":4,"core":"halo"})", "sm_90a"},
      {R"("kernel":[3,3],"stride":[2,2],"pad":[1,1])", R"({"bm":128,"bn":64,"bk":256,"stages":2,"core":"halo"})", "sm_90a"},
      {R"("kernel":[3,3],"stride":[1,1],"pad":[1,1])", R"({"bm":128,"bn":128,"bk":512,"stages":4})", "sm_90a"},
      {R"("kernel":[1,1],"stride":[2,2])", R"({"bm":128,"bn":64,"bk":512,"stages":3})", "sm_90a"},
      {R"("kernel":[3,3],"stride":[1,1],"pad":[1,1])", R"({"bm":64,"bn":64,"bk":512})", "sm_80"}};
  for (const auto& c : convs)
    jobs.push_back({fmt::format("apconv {} {} {}", c.conv, c.tile, c.arch),
                    spec_of(fmt::format(R"({{"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",{},
                                            "output":"int16","tile":{}}})", c.conv, c.tile).c_str()),
                    c.arch, {}, {}, 0});
  compile_with_ptxas_info(jobs);
  for (const Job& j : jobs) {
    INFO(j.label);
    CHECK(apnn::generate(j.spec, j.arch).source.find("typedef apnn::i16 Out;") != std::string::npos);
  }
  MESSAGE(jobs.size() << " int16-output kernels (APMM and APConv), none spills");
  // w1a2 128x192 (the bench's 8192^3 tile, 192 accumulators a thread): with int32 it spills
  // a few bytes (4 stored, 16 loaded; session 31), and so did int16 (8 and 20) until its
  // staging took stmatrix and packed column terms (session 35): none now.
  std::vector<Job> wide = {{"w1a2 128x192 int16", spec_of(R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",
      "output":"int16","tile":{"bm":128,"bn":192,"bk":1024,"stages":3,"cluster":2}})"), "sm_90a", {}, {}, 0}};
  setenv("APNN_PTXAS_INFO", "1", 1);
  run_jobs(wide, 1, /*arch_source=*/true);
  unsetenv("APNN_PTXAS_INFO");
  REQUIRE(wide[0].error.empty());
  // The GEMM kernel's own counts (the module's pack kernels come first in the log).
  const std::regex spills(R"(entry function 'apnn_apmm'[\s\S]*?(\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::smatch m;
  REQUIRE(std::regex_search(wide[0].out.log, m, spills));
  MESSAGE("w1a2 128x192 int16: " << m[1] << " bytes spill stores, " << m[2] << " bytes spill loads");
  CHECK(std::stoi(m[1]) == 0);
  CHECK(std::stoi(m[2]) == 0);
}
