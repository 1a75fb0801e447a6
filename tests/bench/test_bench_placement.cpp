// apnn_bench_placement (bench/placement_main.cpp) through its command line: every bad input
// is one line on stderr and exit 2; without a GPU a good request exits 3, with one it prints
// a time for each pad (after any preloaded kernels).
#include <stdlib.h>

#include <cstdlib>

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "run_cli.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

struct Sandbox {
  ScratchDir scratch{"apnn-placement-test"};
  const fs::path& dir = scratch.path();
  std::string file(const std::string& name, const std::string& text) const {
    write_file(dir / name, text);
    return (dir / name).string();
  }
  // $APNN_BENCH_PLACEMENT overrides the build's path (binaries carried to a GPU machine).
  CliResult run(const std::vector<std::string>& args) const {
    const char* bin = std::getenv("APNN_BENCH_PLACEMENT");
    return run_program(bin && *bin ? fs::absolute(bin).string() : APNN_BENCH_PLACEMENT_PATH, args, dir, dir / "cache", dir);
  }
};

const std::vector<std::string> kShape = {"--batch", "2", "--in-channels", "64", "--height", "9", "--width", "7",
                                         "--out-channels", "64"};

std::vector<std::string> with_shape(std::vector<std::string> args) {
  args.insert(args.end(), kShape.begin(), kShape.end());
  return args;
}

void expect_usage_error(const Sandbox& sb, const std::vector<std::string>& args, const std::string& needle) {
  const CliResult r = sb.run(args);
  INFO(describe(args, r));
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(lines_of(r.err).size() == 1);
  CHECK_MESSAGE(contains(r.err, needle), "stderr lacks '" << needle << "'");
}

}  // namespace

TEST_CASE("apnn_bench_placement: bad input is one line and exit 2") {
  Sandbox sb;
  const std::string conv = sb.file("conv.json", R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",
                                                   "kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  expect_usage_error(sb, {}, "spec is required");
  expect_usage_error(sb, with_shape({(sb.dir / "missing.json").string()}), "cannot read");
  expect_usage_error(sb, with_shape({sb.file("bad.json", "{\"op\": ")}), "malformed JSON");
  expect_usage_error(sb, with_shape({sb.file("apmm.json", R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"})")}),
                     "op");
  expect_usage_error(sb, with_shape({sb.file("wbits.json", R"({"op":"apconv","w_bits":9,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",
                                                              "kernel":[3,3],"stride":[1,1],"pad":[1,1]})")}),
                     "w_bits");
  expect_usage_error(sb, {conv, "--batch", "0", "--in-channels", "64", "--height", "9", "--width", "7", "--out-channels", "64"},
                     "--batch");
  expect_usage_error(sb, {conv, "--batch", "2", "--in-channels", "64", "--height", "9", "--width", "7"}, "--out-channels");
  expect_usage_error(sb, with_shape({conv, "--pad-mb", "-1"}), "--pad-mb");
  // Preloaded specs are read and checked before any driver call, as the timed one is.
  expect_usage_error(sb, with_shape({conv, "--preload", (sb.dir / "missing.json").string()}), "cannot read");
  expect_usage_error(sb, with_shape({sb.file("apmm2.json", R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"})"),
                                     "--preload", conv}),
                     "apmm2.json: op");
}

TEST_CASE("apnn_bench_placement: a good request times each pad on a GPU, exits 3 without one") {
  Sandbox sb;
  const std::string conv = sb.file("conv.json", R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",
                                                   "kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  const std::vector<std::string> args = with_shape({conv, "--pad-mb", "0", "1.5", "--preload", conv});
  const CliResult r = sb.run(args);
  INFO(describe(args, r));
  if (r.code == 3) {
    CHECK(r.out.empty());
    CHECK(lines_of(r.err).size() == 1);
    CHECK((contains(r.err, "driver") || contains(r.err, "device")));
    MESSAGE("no GPU here: the timing side of apnn_bench_placement is not exercised");
    return;
  }
  REQUIRE(r.code == 0);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 4);
  CHECK(contains(lines[0], "preloaded {"));
  CHECK(contains(lines[1], "spec {"));  // the tile the bench would run at this shape
  CHECK(contains(lines[1], "\"tile\""));
  CHECK(contains(lines[2], "pad     0.00 MB:"));
  CHECK(contains(lines[3], "pad     1.50 MB:"));
  for (size_t i = 2; i < lines.size(); ++i) CHECK(contains(lines[i], " us over "));
}
