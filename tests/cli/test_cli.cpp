// End-to-end tests of the `apnn` binary: exit codes, one-line errors, the cache subcommands,
// and that nothing is written when inputs are bad. Each test has its own APNN_CACHE_DIR.
#include <doctest/doctest.h>

#include "run_cli.h"
#include "test_util.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;



using Result = CliResult;

// A scratch directory holding the test's files and its cache (APNN_CACHE_DIR=<dir>/cache).
class Sandbox {
 public:
  fs::path path(const std::string& name) const { return dir_ / name; }
  fs::path cache() const { return dir_ / "cache"; }
  std::string file(const std::string& name, const std::string& content) const {
    write_file(path(name), content);
    return path(name).string();
  }

  // Runs the binary in this sandbox with its cache (killed after limit).
  Result run(const std::vector<std::string>& args, std::chrono::seconds limit = kCliTimeLimit) const {
    return run_apnn(args, dir_, cache(), dir_, limit);
  }

 private:
  ScratchDir scratch_{"apnn-cli-test"};
  const fs::path& dir_ = scratch_.path();
};

// Exit code `code`, nothing on stdout, exactly one line on stderr containing every needle.
Result expect_error(const Sandbox& sb, const std::vector<std::string>& args, int code,
                    std::initializer_list<std::string> needles) {
  const Result r = sb.run(args);
  INFO(describe(args, r));
  if (std::getenv("APNN_TEST_VERBOSE")) MESSAGE(describe(args, r));
  CHECK(r.code == code);
  CHECK(r.out.empty());
  CHECK(lines_of(r.err).size() == 1);
  CHECK((!r.err.empty() && r.err.back() == '\n'));
  for (const auto& n : needles) CHECK_MESSAGE(contains(r.err, n), "stderr lacks '" << n << "'");
  return r;
}


// --- .npy writer (v1.0), independent of the library's npy module ---

std::string npy_bytes(const std::string& descr, const std::vector<int64_t>& shape, const std::string& data,
                      bool fortran = false) {
  std::string sh = "(";
  for (size_t i = 0; i < shape.size(); ++i) sh += (i ? ", " : "") + std::to_string(shape[i]);
  sh += shape.size() == 1 ? ",)" : ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + sh + ", }";
  size_t total = 10 + dict.size() + 1;
  dict += std::string((64 - total % 64) % 64, ' ') + "\n";
  const uint16_t len = static_cast<uint16_t>(dict.size());
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  return out + dict + data;
}

std::string npy_i16(const std::vector<int64_t>& shape, const std::vector<int>& values) {
  std::string data;
  for (int v : values) {
    const auto u = static_cast<uint16_t>(static_cast<int16_t>(v));
    data += static_cast<char>(u & 0xff);
    data += static_cast<char>(u >> 8);
  }
  return npy_bytes("<i2", shape, data);
}

std::string npy_f4(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  std::string data(values.size() * 4, '\0');
  std::memcpy(data.data(), values.data(), data.size());
  return npy_bytes("<f4", shape, data);
}

// Valid values for 1-bit pm1 (W) and 2-bit unsigned (X).
std::vector<int> pm1_values(size_t n) {
  std::vector<int> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (i % 3 == 0) ? -1 : 1;
  return v;
}
std::vector<int> u2_values(size_t n) {
  std::vector<int> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int>(i % 4);
  return v;
}

const char* const kSpec = R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"})";

bool driver_loadable() {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) ::dlclose(h);
  return h != nullptr;
}

// A GPU case's run that found the driver but no device (exit 3): reported as a skip.
bool skipped_without_device(const Result& r) {
  if (r.code != 3) return false;
  MESSAGE("SKIP: the driver loads but reports no device: " << r.err);
  return true;
}

}  // namespace

TEST_CASE("cli: npy helper writes numpy's v1.0 layout") {
  const std::string b = npy_i16({2, 3}, {1, 2, 3, 4, 5, 6});
  // 10-byte preamble + dict padded with spaces so the data starts on a 64-byte boundary.
  REQUIRE(b.size() == 128 + 12);
  CHECK(b.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
  CHECK(static_cast<unsigned char>(b[8]) + 256 * static_cast<unsigned char>(b[9]) == 118);
  CHECK(b[127] == '\n');
  CHECK(b.compare(128, 4, std::string("\x01\x00\x02\x00", 4)) == 0);
  CHECK(contains(b, "'shape': (2, 3), }"));
  CHECK(contains(npy_i16({4}, {1, 2, 3, 4}), "'shape': (4,), }"));
  CHECK(contains(npy_i16({1, 2, 2}, {1, 2, 3, 4}), "'shape': (1, 2, 2), }"));
}

TEST_CASE("cli: compile prints one JSON line, miss then hit with the same key; cache ls/stats/clear") {
  Sandbox sb;
  const std::string spec = sb.file("spec.json", kSpec);
  const std::vector<std::string> args = {"compile", spec, "--arch", "sm_90a"};

  const Result first = sb.run(args);
  INFO(describe(args, first));
  REQUIRE(first.code == 0);
  CHECK(first.err.empty());
  REQUIRE(lines_of(first.out).size() == 1);
  const json a = json::parse(first.out);
  CHECK(a.at("arch") == "sm_90a");
  CHECK(a.at("cache") == "miss");
  const std::string key = a.at("key");
  CHECK(std::regex_match(key, std::regex("[0-9a-f]{32}")));
  CHECK(a.at("cubin_bytes").get<int64_t>() > 0);
  CHECK(a.at("compile_ms").get<double>() > 0);
  // The canonical spec: the request plus the default tile.
  const json s = a.at("spec");
  CHECK(s.at("op") == "apmm");
  CHECK(s.at("w_bits") == 1);
  CHECK(s.at("w_enc") == "pm1");
  CHECK(s.at("x_bits") == 2);
  CHECK(s.at("x_enc") == "unsigned");
  CHECK(s.at("tile").size() == 6);
  CHECK(cache_entries(sb.cache()) == 1);
  CHECK(fs::is_regular_file(sb.cache() / "sm_90a" / (key + ".apnnc")));

  const Result second = sb.run(args);
  INFO(describe(args, second));
  REQUIRE(second.code == 0);
  CHECK(second.err.empty());
  REQUIRE(lines_of(second.out).size() == 1);
  const json b = json::parse(second.out);
  CHECK(b.at("cache") == "hit");
  CHECK(b.at("key") == key);
  CHECK(b.at("spec") == s);
  CHECK(b.at("cubin_bytes") == a.at("cubin_bytes"));
  CHECK(cache_entries(sb.cache()) == 1);

  // ls: one line naming the bucket, the key and the canonical spec.
  Result ls = sb.run({"cache", "ls"});
  INFO(describe({"cache", "ls"}, ls));
  CHECK(ls.code == 0);
  REQUIRE(lines_of(ls.out).size() == 1);
  CHECK(contains(ls.out, "sm_90a"));
  CHECK(contains(ls.out, key));
  CHECK(contains(ls.out, s.dump()));
  CHECK_FALSE(contains(ls.out, "[corrupt]"));

  Result lsj = sb.run({"cache", "ls", "--json"});
  CHECK(lsj.code == 0);
  REQUIRE(lines_of(lsj.out).size() == 1);
  const json e = json::parse(lsj.out);
  CHECK(e.at("arch") == "sm_90a");
  CHECK(e.at("key") == key);
  CHECK(e.at("valid") == true);
  CHECK(e.at("bytes") == a.at("cubin_bytes"));
  CHECK(e.at("label") == s.dump());

  // stats: counters of both runs.
  Result st = sb.run({"cache", "stats", "--json"});
  INFO(describe({"cache", "stats", "--json"}, st));
  CHECK(st.code == 0);
  REQUIRE(lines_of(st.out).size() == 1);
  const json j = json::parse(st.out);
  CHECK(j.at("entries") == 1);
  CHECK(j.at("misses") == 1);
  CHECK(j.at("compiles") == 1);
  CHECK(j.at("disk_hits") == 1);
  CHECK(j.at("corrupt_entries") == 0);
  CHECK(j.at("persistent") == true);
  CHECK(fs::equivalent(j.at("dir").get<std::string>(), sb.cache()));
  CHECK(j.at("disk_bytes").get<int64_t>() > a.at("cubin_bytes").get<int64_t>());
  CHECK(j.at("bytes_written").get<int64_t>() > 0);

  Result plain = sb.run({"cache", "stats"});
  CHECK(plain.code == 0);
  CHECK(contains(plain.out, "entries"));

  // clear empties it.
  Result cl = sb.run({"cache", "clear"});
  INFO(describe({"cache", "clear"}, cl));
  CHECK(cl.code == 0);
  CHECK(contains(cl.out, "removed 1 entries"));
  CHECK(cache_entries(sb.cache()) == 0);
  ls = sb.run({"cache", "ls"});
  CHECK(ls.code == 0);
  CHECK(ls.out.empty());
  st = sb.run({"cache", "stats", "--json"});
  CHECK(json::parse(st.out).at("entries") == 0);

  // After clearing, the same spec compiles again (a miss) to the same key.
  const Result third = sb.run(args);
  REQUIRE(third.code == 0);
  const json c = json::parse(third.out);
  CHECK(c.at("cache") == "miss");
  CHECK(c.at("key") == key);
}

TEST_CASE("cli: the key follows the canonical spec and the arch") {
  Sandbox sb;
  const std::string spec = sb.file("spec.json", kSpec);
  // The same spec with keys reordered, whitespace and the default tile spelled out.
  const std::string spec2 = sb.file("spec2.json", R"(
    { "x_enc": "unsigned", "x_bits": 2,
      "w_enc": "pm1",      "w_bits": 1, "op": "apmm" }
  )");
  auto compile = [&](const std::string& path, const std::string& arch) {
    const std::vector<std::string> args = {"compile", path, "--arch", arch};
    const Result r = sb.run(args);
    INFO(describe(args, r));
    REQUIRE(r.code == 0);
    return json::parse(r.out);
  };
  const json a = compile(spec, "sm_80");
  const json b = compile(spec2, "sm_80");
  CHECK(b.at("cache") == "hit");
  CHECK(b.at("key") == a.at("key"));
  json explicit_tile = json::parse(kSpec);
  explicit_tile["tile"] = a.at("spec").at("tile");
  const json c = compile(sb.file("spec3.json", explicit_tile.dump()), "sm_80");
  CHECK(c.at("cache") == "hit");
  CHECK(c.at("key") == a.at("key"));

  const json d = compile(spec, "sm_86");
  CHECK(d.at("cache") == "miss");
  CHECK(d.at("key") != a.at("key"));
  json other = json::parse(kSpec);
  other["x_bits"] = 3;
  const json e = compile(sb.file("spec4.json", other.dump()), "sm_80");
  CHECK(e.at("cache") == "miss");
  CHECK(e.at("key") != a.at("key"));
  CHECK(cache_entries(sb.cache()) == 3);
}

TEST_CASE("cli: a cluster tile steps 1024 or 512 bits of K; w8a8's folded tile compiles at 512 only") {
  Sandbox sb;
  auto w8a8 = [&](int bk) {
    const json tile = {{"bm", 128}, {"bn", 32}, {"bk", bk}, {"stages", 2}, {"warps_m", 8}, {"warps_n", 1}, {"cluster", 2}};
    const json spec = {{"op", "apmm"}, {"w_bits", 8}, {"w_enc", "signed"}, {"x_bits", 8}, {"x_enc", "unsigned"}, {"tile", tile}};
    return sb.file("w8a8_" + std::to_string(bk) + ".json", spec.dump());
  };
  // Two 1024-bit stages of 8 W planes x 128 rows and 8 X planes x 32 rows: 320 KB.
  expect_error(sb, {"compile", w8a8(1024), "--arch", "sm_90a"}, 2, {"w8a8_1024.json", "shared memory", "327680"});
  expect_error(sb, {"compile", w8a8(256), "--arch", "sm_90a"}, 2, {"tile.cluster 2", "bk 1024 or 512", "256"});
  CHECK(cache_entries(sb.cache()) == 0);
  const std::vector<std::string> args = {"compile", w8a8(512), "--arch", "sm_90a"};
  const Result r = sb.run(args);
  INFO(describe(args, r));
  REQUIRE(r.code == 0);
  const json tile = json::parse(r.out).at("spec").at("tile");
  CHECK(tile.at("bk") == 512);
  CHECK(tile.at("cluster") == 2);
  CHECK(cache_entries(sb.cache()) == 1);
}

TEST_CASE("cli: bad specs and options give exit 2 and one stderr line naming the problem") {
  Sandbox sb;
  auto spec_with = [&](const char* name, const std::string& text) { return sb.file(name, text); };
  json base = json::parse(kSpec);
  auto mod = [&](const char* field, const json& v) {
    json j = base;
    j[field] = v;
    return j.dump();
  };

  const std::string malformed = spec_with("malformed.json", R"({"op": "apmm", "w_bits": 1,)");
  expect_error(sb, {"compile", malformed, "--arch", "sm_80"}, 2, {"malformed.json", "malformed JSON"});
  expect_error(sb, {"compile", spec_with("unknown.json", mod("bias", 1)), "--arch", "sm_80"}, 2, {"unknown.json", "'bias'"});
  expect_error(sb, {"compile", spec_with("bits0.json", mod("w_bits", 0)), "--arch", "sm_80"}, 2, {"bits0.json", "w_bits", "1..8"});
  expect_error(sb, {"compile", spec_with("bits9.json", mod("x_bits", 9)), "--arch", "sm_80"}, 2, {"bits9.json", "x_bits", "1..8"});
  expect_error(sb, {"compile", spec_with("enc.json", mod("w_enc", "bipolar")), "--arch", "sm_80"}, 2,
               {"enc.json", "w_enc", "bipolar"});
  expect_error(sb, {"compile", spec_with("bk.json", mod("tile", {{"bm", 64}, {"bn", 64}, {"bk", 128}})), "--arch", "sm_80"}, 2,
               {"bk.json", "tile.bk", "256, 512, 1024"});
  // tile.cluster: out of range, not a power of two; 2 on a target without the sm_90a wgmma
  // core (only sm_90a has it).
  const json tma_tile = {{"bm", 128}, {"bn", 128}, {"bk", 1024}, {"stages", 4}, {"warps_m", 8}, {"warps_n", 1}, {"cluster", 2}};
  json bad_cluster = tma_tile;
  bad_cluster["cluster"] = 16;
  expect_error(sb, {"compile", spec_with("cluster16.json", mod("tile", bad_cluster)), "--arch", "sm_90a"}, 2,
               {"cluster16.json", "tile.cluster", "1..8"});
  bad_cluster["cluster"] = 3;
  expect_error(sb, {"compile", spec_with("cluster3.json", mod("tile", bad_cluster)), "--arch", "sm_90a"}, 2,
               {"cluster3.json", "tile.cluster", "1, 2, 4, 8", "3"});
  expect_error(sb, {"compile", spec_with("out8.json", mod("output", "int8")), "--arch", "sm_80"}, 2,
               {"out8.json", "'output'", "\"int32\" or \"int16\""});
  expect_error(sb, {"compile", spec_with("out16w8.json", json{{"op", "apmm"}, {"w_bits", 8}, {"w_enc", "pm1"}, {"x_bits", 8},
                                                               {"x_enc", "pm1"}, {"output", "int16"}}.dump()),
                    "--arch", "sm_80"},
               2, {"out16w8.json", "'output'", "cannot hold one product"});
  const std::string tma = spec_with("tma.json", mod("tile", tma_tile));
  for (const char* arch : {"sm_80", "sm_90"})
    expect_error(sb, {"compile", tma, "--arch", arch}, 2, {"tile.cluster 2", "sm_90a", std::string("'") + arch + "'"});
  const std::string missing = sb.path("does-not-exist.json").string();
  expect_error(sb, {"compile", missing, "--arch", "sm_80"}, 2, {missing});
  const std::string good = spec_with("good.json", kSpec);
  expect_error(sb, {"compile", good, "--arch", "sm_75"}, 2, {"sm_75", "sm_80, sm_86, sm_89, sm_90, sm_90a"});
  expect_error(sb, {"compile", good, "--arch", "compute_90"}, 2, {"compute_90"});
  // A bad spec is reported before the arch is looked at.
  expect_error(sb, {"compile", spec_with("bits0b.json", mod("w_bits", 0)), "--arch", "sm_75"}, 2, {"w_bits"});
  CHECK(cache_entries(sb.cache()) == 0);

  // Usage errors.
  expect_error(sb, {"frobnicate"}, 2, {});
  expect_error(sb, {"compile", good, "--arch", "sm_80", "--bogus"}, 2, {"--bogus"});
  expect_error(sb, {}, 2, {});
  expect_error(sb, {"compile"}, 2, {"spec"});
  expect_error(sb, {"cache"}, 2, {});
  expect_error(sb, {"cache", "prune"}, 2, {});
  expect_error(sb, {"verify", good, "--m", "8", "--n", "8"}, 2, {"--k"});
  expect_error(sb, {"verify", good, "--m", "eight", "--n", "8", "--k", "8"}, 2, {"--m"});
  expect_error(sb, {"verify", good, "--m", "8", "--n", "8", "--k", "8", "--input-sets", "33"}, 2, {"--input-sets", "33"});
  expect_error(sb, {"verify", good, "--m", "8", "--n", "8", "--k", "8", "--input-sets", "-1"}, 2, {"--input-sets"});
  expect_error(sb, {"verify", good, "--m", "8", "--n", "8", "--k", "8", "--input-sets", "two"}, 2, {"--input-sets", "two"});
  expect_error(sb, {"gemm", good, "--w", "w.npy", "--x", "x.npy"}, 2, {"--out"});
  // tune --core names a core family; checked before the spec file and the GPU.
  expect_error(sb, {"tune", good, "--m", "8", "--n", "8", "--k", "8", "--core", "tensor"}, 2,
               {"--core", "'tensor'", "mma.sync, wgmma, wgmma-tma, wgmma-halo"});
  expect_error(sb, {"tune", missing, "--m", "8", "--n", "8", "--k", "8", "--core", "wgmma,tma"}, 2, {"--core", "'tma'"});
  // One word an occurrence: the spec after --core stays the positional (here: not found).
  expect_error(sb, {"tune", "--core", "wgmma", missing, "--m", "8", "--n", "8", "--k", "8"}, 2, {missing});
  expect_error(sb, {"tune", "--core", "wgmma", "--core", "halo", missing, "--m", "8", "--n", "8", "--k", "8"}, 2,
               {"--core", "'halo'"});
  CHECK(cache_entries(sb.cache()) == 0);
}

TEST_CASE("cli: gemm with bad .npy inputs exits 2, names the problem and writes no output") {
  Sandbox sb;
  const std::string spec = sb.file("spec.json", kSpec);
  const std::string w_ok = sb.file("w.npy", npy_i16({4, 64}, pm1_values(4 * 64)));
  const std::string x_ok = sb.file("x.npy", npy_i16({3, 64}, u2_values(3 * 64)));
  const std::string out = sb.path("y.npy").string();

  struct Case {
    const char* what;
    std::string w, x;
    std::vector<std::string> needles;
  };
  std::vector<int> bad_w = pm1_values(4 * 64);
  bad_w[1] = 2;  // (0, 1)
  std::vector<int> bad_w_late = pm1_values(4 * 64);
  bad_w_late[2 * 64 + 5] = 0;  // (2, 5): even, not a pm1 value
  std::vector<int> bad_x = u2_values(3 * 64);
  bad_x[64 + 63] = 4;  // (1, 63)
  const std::vector<Case> cases = {
      {"missing W", sb.path("nope.npy").string(), x_ok, {"nope.npy"}},
      {"missing X", w_ok, sb.path("nox.npy").string(), {"nox.npy"}},
      {"float W", sb.file("wf.npy", npy_f4({4, 64}, std::vector<float>(4 * 64, 1.0f))), x_ok, {"wf.npy", "<f4"}},
      {"3-D W", sb.file("w3.npy", npy_i16({2, 2, 64}, pm1_values(2 * 2 * 64))), x_ok, {"w3.npy", "2-D", "(2, 2, 64)"}},
      {"1-D X", w_ok, sb.file("x1.npy", npy_i16({64}, u2_values(64))), {"x1.npy", "2-D"}},
      {"mismatched K", w_ok, sb.file("x32.npy", npy_i16({3, 32}, u2_values(3 * 32))), {"mismatched K", "(4, 64)", "(3, 32)"}},
      {"W value 2 at (0, 1)", sb.file("wbad.npy", npy_i16({4, 64}, bad_w)), x_ok, {"wbad.npy", "W", "2", "(0, 1)", "1-bit pm1"}},
      {"W value 0 at (2, 5)", sb.file("wbad2.npy", npy_i16({4, 64}, bad_w_late)), x_ok, {"W", "value 0", "(2, 5)"}},
      {"X value 4 at (1, 63)", w_ok, sb.file("xbad.npy", npy_i16({3, 64}, bad_x)), {"xbad.npy", "X", "value 4", "(1, 63)", "2-bit unsigned"}},
      {"zero rows W", sb.file("w0.npy", npy_i16({0, 64}, {})), x_ok, {"w0.npy", "(0, 64)"}},
      {"zero K", sb.file("wk0.npy", npy_i16({4, 0}, {})), sb.file("xk0.npy", npy_i16({3, 0}, {})), {"wk0.npy", "(4, 0)"}},
      {"zero rows X", w_ok, sb.file("x0.npy", npy_i16({0, 64}, {})), {"x0.npy", "(0, 64)"}},
      {"not a .npy", sb.file("text.npy", "hello, world\n"), x_ok, {"text.npy"}},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    const Result r = expect_error(sb, {"gemm", spec, "--w", c.w, "--x", c.x, "--out", out}, 2, {});
    for (const auto& n : c.needles) CHECK_MESSAGE(contains(r.err, n), "stderr lacks '" << n << "'");
    CHECK_FALSE(fs::exists(out));
  }
  // A bad spec is exit 2 as well, and also writes nothing.
  const std::string bad_spec = sb.file("bad.json", R"({"op":"apmm","w_bits":0,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"})");
  expect_error(sb, {"gemm", bad_spec, "--w", w_ok, "--x", x_ok, "--out", out}, 2, {"w_bits"});
  CHECK_FALSE(fs::exists(out));
  // Nothing left behind next to the output either (no temp files).
  for (const auto& e : fs::directory_iterator(sb.path(".")))
    CHECK_MESSAGE(e.path().filename().string().rfind("y.npy", 0) != 0, e.path());
}

TEST_CASE("cli: verify rejects empty or negative shapes with exit 2") {
  Sandbox sb;
  const std::string spec = sb.file("spec.json", kSpec);
  expect_error(sb, {"verify", spec, "--m", "0", "--n", "8", "--k", "64"}, 2, {"M", "0"});
  expect_error(sb, {"verify", spec, "--m", "8", "--n", "0", "--k", "64"}, 2, {"N"});
  expect_error(sb, {"verify", spec, "--m", "8", "--n", "8", "--k", "0"}, 2, {"K"});
  expect_error(sb, {"verify", spec, "--m", "-4", "--n", "8", "--k", "64"}, 2, {});
  expect_error(sb, {"verify", spec, "--m", "3000000000", "--n", "8", "--k", "64"}, 2, {"M=3000000000", "2147483392"});
  // K at which an 8-bit unsigned product could leave int32: 255*255*K > 2^31-1 from K = 33026.
  const std::string u8 = sb.file("u8.json", R"({"op":"apmm","w_bits":8,"w_enc":"unsigned","x_bits":8,"x_enc":"unsigned"})");
  expect_error(sb, {"verify", u8, "--m", "1", "--n", "1", "--k", "33026"}, 2, {"K=33026", "33025"});
  // A bad spec file is exit 2 for verify too.
  expect_error(sb, {"verify", sb.path("missing.json").string(), "--m", "1", "--n", "1", "--k", "1"}, 2, {"missing.json"});
  CHECK(cache_entries(sb.cache()) == 0);
}

// Regression: CLI11 alone reports "A subcommand is required" without naming the unknown word.
TEST_CASE("cli: an unknown subcommand is named in the error") {
  Sandbox sb;
  expect_error(sb, {"frobnicate"}, 2, {"frobnicate"});
  expect_error(sb, {"cache", "prune"}, 2, {"prune"});
}

TEST_CASE("cli: without a GPU, gemm and verify exit 3 and compile without --arch suggests it") {
  if (driver_loadable()) {
    MESSAGE("libcuda.so.1 is loadable here: the no-driver checks do not apply");
    return;
  }
  Sandbox sb;
  const std::string spec = sb.file("spec.json", kSpec);
  const std::string w = sb.file("w.npy", npy_i16({4, 64}, pm1_values(4 * 64)));
  const std::string x = sb.file("x.npy", npy_i16({3, 64}, u2_values(3 * 64)));
  const std::string out = sb.path("y.npy").string();

  Result r = expect_error(sb, {"gemm", spec, "--w", w, "--x", x, "--out", out}, 3, {});
  CHECK((contains(r.err, "no CUDA driver") || contains(r.err, "no CUDA device")));
  CHECK_FALSE(fs::exists(out));

  r = expect_error(sb, {"verify", spec, "--m", "64", "--n", "64", "--k", "256"}, 3, {});
  CHECK((contains(r.err, "no CUDA driver") || contains(r.err, "no CUDA device")));
  r = expect_error(sb, {"verify", spec, "--m", "64", "--n", "64", "--k", "256", "--json"}, 3, {});
  CHECK((contains(r.err, "no CUDA driver") || contains(r.err, "no CUDA device")));

  r = expect_error(sb, {"compile", spec}, 3, {"--arch"});
  CHECK((contains(r.err, "no CUDA driver") || contains(r.err, "no CUDA device")));
  CHECK(cache_entries(sb.cache()) == 0);
}

TEST_CASE("cli: apconv specs compile to their own key; gemm/conv/verify refuse the wrong op or bad tensors") {
  Sandbox sb;
  const std::string mm = sb.file("mm.json", kSpec);
  const std::string cv = sb.file(
      "conv.json", R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"pad":[1,1]})");
  const std::vector<std::string> args = {"compile", cv, "--arch", "sm_80"};
  const Result r = sb.run(args);
  INFO(describe(args, r));
  REQUIRE(r.code == 0);
  const json c = json::parse(r.out);
  CHECK(c.at("cache") == "miss");
  CHECK(c.at("spec").at("op") == "apconv");
  CHECK(c.at("spec").at("kernel") == json::array({3, 3}));
  CHECK(c.at("spec").at("pad") == json::array({1, 1}));
  const Result m = sb.run({"compile", mm, "--arch", "sm_80"});
  REQUIRE(m.code == 0);
  CHECK(json::parse(m.out).at("key") != c.at("key"));

  const std::string w2 = sb.file("w2.npy", npy_i16({4, 64}, pm1_values(4 * 64)));
  const std::string x2 = sb.file("x2.npy", npy_i16({3, 64}, u2_values(3 * 64)));
  const std::string w4 = sb.file("w4.npy", npy_i16({4, 2, 3, 3}, pm1_values(4 * 2 * 9)));
  const std::string x4 = sb.file("x4.npy", npy_i16({1, 2, 5, 5}, u2_values(2 * 25)));
  const std::string out = sb.path("y.npy").string();
  expect_error(sb, {"gemm", cv, "--w", w2, "--x", x2, "--out", out}, 2, {"apmm", "apconv"});
  expect_error(sb, {"conv", mm, "--w", w4, "--x", x4, "--out", out}, 2, {"apconv", "apmm"});
  expect_error(sb, {"conv", cv, "--w", w2, "--x", x4, "--out", out}, 2, {"w2.npy", "4-D"});
  expect_error(sb, {"conv", cv, "--w", w4, "--x", sb.file("x3c.npy", npy_i16({1, 3, 5, 5}, u2_values(75))), "--out", out}, 2,
               {"channels"});
  expect_error(sb, {"conv", cv, "--w", sb.file("w5.npy", npy_i16({4, 2, 5, 5}, pm1_values(4 * 2 * 25))), "--x", x4, "--out", out},
               2, {"5x5", "3x3"});
  std::vector<int> bad = pm1_values(4 * 2 * 9);
  bad[9 + 4] = 3;  // o=0, flattened index 13
  expect_error(sb, {"conv", cv, "--w", sb.file("wbad.npy", npy_i16({4, 2, 3, 3}, bad)), "--x", x4, "--out", out}, 2,
               {"wbad.npy", "value 3"});
  expect_error(sb, {"verify", cv, "--m", "8", "--n", "8", "--k", "8"}, 2, {"--m"});
  expect_error(sb, {"verify", mm, "--m", "8", "--n", "8", "--k", "64", "--batch", "1"}, 2, {"--batch"});
  CHECK_FALSE(fs::exists(out));
  if (!driver_loadable()) {
    expect_error(sb, {"conv", cv, "--w", w4, "--x", x4, "--out", out}, 3, {"no CUDA"});
    CHECK_FALSE(fs::exists(out));
    expect_error(sb, {"verify", cv, "--batch", "1", "--in-channels", "2", "--height", "5", "--width", "5", "--out-channels", "4"},
                 3, {"no CUDA"});
  }
}

namespace {

// Sets an environment variable for one scope (the CLI child inherits the test's environment).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

const char* const kTmaSpec = R"({"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned",
  "tile":{"bm":128,"bn":64,"bk":1024,"stages":4,"warps_m":8,"warps_n":1,"cluster":2}})";

}  // namespace

TEST_CASE("cli: verify --timeline needs APNN_TIMELINE and an apmm spec, and writes nothing on an error") {
  Sandbox sb;
  const std::string tma = sb.file("tma.json", kTmaSpec);
  const std::string cv = sb.file(
      "conv.json", R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"pad":[1,1]})");
  const std::string file = sb.path("tl.json").string();
  {
    ScopedEnv off("APNN_TIMELINE", nullptr);
    expect_error(sb, {"verify", tma, "--m", "256", "--n", "128", "--k", "2048", "--timeline", file}, 2,
                 {"--timeline", "APNN_TIMELINE=1"});
    ScopedEnv zero("APNN_TIMELINE", "0");
    expect_error(sb, {"verify", tma, "--m", "256", "--n", "128", "--k", "2048", "--timeline", file}, 2, {"APNN_TIMELINE=1"});
  }
  ScopedEnv on("APNN_TIMELINE", "1");
  expect_error(sb, {"verify", cv, "--batch", "1", "--in-channels", "2", "--height", "5", "--width", "5", "--out-channels",
                    "4", "--timeline", file},
               2, {"--timeline", "apmm"});
  expect_error(sb, {"verify", tma, "--m", "256", "--n", "128", "--k", "2048", "--timeline"}, 2, {"--timeline"});
  CHECK_FALSE(fs::exists(file));
  if (!driver_loadable()) {
    expect_error(sb, {"verify", tma, "--m", "256", "--n", "128", "--k", "2048", "--timeline", file}, 3, {"no CUDA"});
    CHECK_FALSE(fs::exists(file));
  }
}

// End to end where a GPU is: the timed launches' records, one per block, each launch whole.
TEST_CASE("cli: on a GPU, verify --timeline writes each timed launch's block phases; a core without hooks exits 2") {
  if (!driver_loadable()) {
    MESSAGE("SKIP: no CUDA driver here: the timeline needs a GPU");
    return;
  }
  Sandbox sb;
  ScopedEnv on("APNN_TIMELINE", "1");
  const std::string tma = sb.file("tma.json", kTmaSpec);
  const std::string file = sb.path("tl.json").string();
  // 3 x 4 tiles of 128x64 (a partial one in each direction) and 5 K steps of 1024 bits.
  const Result r = sb.run({"verify", tma, "--m", "300", "--n", "200", "--k", "4100", "--timeline", file, "--json"});
  if (skipped_without_device(r)) return;
  INFO(describe({"verify --timeline"}, r));
  REQUIRE(r.code == 0);
  CHECK(json::parse(r.out).at("mismatches") == 0);
  std::ifstream in(file);
  const json t = json::parse(in);
  CHECK(t.at("launches").get<int>() > 10);
  const int blocks = t.at("blocks_per_launch").get<int>();
  CHECK(blocks >= 2);
  CHECK(blocks % 2 == 0);  // whole clusters of 2
  for (const json& l : t.at("per_launch")) {
    CHECK(l.at("blocks") == blocks);
    const double dep = l.at("dep_wait").at("median_us"), full = l.at("first_full").at("median_us"),
                 patch = l.at("first_patch").at("median_us"), exit = l.at("exit").at("last_us");
    CHECK(dep >= 0);
    CHECK(full >= dep);
    CHECK(patch >= full);
    CHECK(exit >= patch);
    CHECK(l.at("duration_us").get<double>() == doctest::Approx(exit));
    // Thread 0's cycle account: every cluster has a patch here (12 tiles, 6 patches).
    const json& c = l.at("consumer");
    CHECK(c.at("blocks").get<int>() >= 2);
    CHECK(c.at("cycles_per_patch").get<double>() > 0);
    const double wait = c.at("full_wait_share"), epilogue = c.at("epilogue_share");
    CHECK(wait >= 0);
    CHECK(epilogue > 0);
    CHECK(wait + epilogue < 1);
  }
  // A spec on the cp.async core has no hooks: exit 2 naming the cause, no file.
  const std::string plain = sb.file("plain.json", kSpec);
  const std::string file2 = sb.path("tl2.json").string();
  expect_error(sb, {"verify", plain, "--m", "64", "--n", "64", "--k", "256", "--timeline", file2}, 2,
               {"records no timeline", "cluster"});
  CHECK_FALSE(fs::exists(file2));
}

TEST_CASE("cli: on a GPU, tune --core sweeps only that core's tiles and records a winner no slower than the untuned tile") {
  if (!driver_loadable()) {
    MESSAGE("SKIP: no CUDA driver here: tune times kernels on a GPU");
    return;
  }
  Sandbox sb;
  // The halo core's tiles (bn 16..128, 2-4 stages) whose launch fits the layer: a short sweep.
  const std::string spec = sb.file(
      "conv.json", R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"pad":[1,1]})");
  const Result r = sb.run({"tune", spec, "--batch", "4", "--in-channels", "128", "--height", "14", "--width", "14",
                           "--out-channels", "128", "--core", "wgmma-halo", "--top", "1000", "--json"});
  if (skipped_without_device(r)) return;
  if (r.code == 2 && contains(r.err, "no legal tile") && !contains(r.err, "sm_90a")) {  // no halo core off sm_90a
    MESSAGE("SKIP: " << r.err);
    return;
  }
  INFO(describe({"tune --core wgmma-halo"}, r));
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  REQUIRE(j.at("top").size() == j.at("candidates").get<size_t>());
  CHECK(j.at("candidates").get<size_t>() >= 6);
  for (const json& c : j.at("top")) CHECK(c.at("tile").value("core", "") == "halo");
  CHECK(j.at("failed") == 0);
  REQUIRE_FALSE(j.at("heuristic").contains("error"));
  const double winner = j.at("top")[0].at("us"), untuned = j.at("heuristic").at("us");
  REQUIRE(untuned > 0);
  CHECK_FALSE(j.contains("recorded_before"));
  CHECK(j.at("recorded") == (winner <= untuned));
  CHECK(fs::exists(sb.cache() / "tuning.json") == (winner <= untuned));

  // Again with a tile in the database (the first sweep's slowest): it runs in the final rounds
  // beside the untuned one, and the winner is recorded only if no slower than both.
  const json slowest = j.at("top").back().at("tile");
  write_file(sb.cache() / "tuning.json",
             json{{"version", 1}, {"entries", {{j.at("key").get<std::string>(), {{"tile", slowest}, {"us", 1.0}}}}}}.dump());
  const Result again = sb.run({"tune", spec, "--batch", "4", "--in-channels", "128", "--height", "14", "--width", "14",
                               "--out-channels", "128", "--core", "wgmma-halo", "--json"});
  INFO(describe({"tune again"}, again));
  REQUIRE(again.code == 0);
  const json k = json::parse(again.out);
  REQUIRE(k.contains("recorded_before"));
  CHECK(k.at("recorded_before").at("tile") == slowest);
  const double before = k.at("recorded_before").at("us"), best = k.at("top")[0].at("us");
  CHECK(before > 1.0);  // timed in this sweep, not the database's figure
  CHECK(k.at("recorded") == (best <= before && best <= k.at("heuristic").at("us").get<double>()));
}

TEST_CASE("cli: bench without a GPU exits 3 with the driver message; bad selections exit 2") {
  Sandbox sb;
  // With a GPU the bench runs compile their kernels cold: up to 5 minutes where other suites
  // share the machine (the probe runs the quick bench whole).
  constexpr std::chrono::seconds kBenchLimit{300};
  const Result probe = sb.run({"bench", "--quick"}, kBenchLimit);
  if (contains(probe.err, "was not built")) {
    MESSAGE("apnn bench was not built here (no cublasLt.h): " << probe.err);
    CHECK(probe.code == 2);
    return;
  }
  // Options are checked before the GPU is looked for.
  expect_error(sb, {"bench", "--prec", "w3a3"}, 2, {"--prec", "w3a3", "w1a2"});
  expect_error(sb, {"bench", "--shapes", "nosuchshape"}, 2, {"--shapes", "nosuchshape"});
  expect_error(sb, {"bench", "--fusion-only", "--shapes", "n1-*"}, 2, {"--shapes", "fusion section"});
  expect_error(sb, {"bench", "--gemm-only", "--conv-only"}, 2, {"--conv-only"});
  expect_error(sb, {"bench", "--launches", "0"}, 2, {"--launches"});
  expect_error(sb, {"bench", "--clocks", "--prec", "w3a3"}, 2, {"--prec", "w3a3"});  // --clocks parses
  if (driver_loadable()) {
    MESSAGE("libcuda.so.1 is loadable here: the no-driver check does not apply");
    // With a GPU: the quick fusion section, its JSON and chart written whole, the run complete.
    const std::string json_path = sb.path("fusion.json").string(), chart_path = sb.path("fusion.svg").string();
    const Result ok =
        sb.run({"bench", "--quick", "--fusion-only", "--json", json_path, "--chart", chart_path}, kBenchLimit);
    if (skipped_without_device(ok)) return;
    INFO(ok.err);
    REQUIRE(ok.code == 0);
    const json doc = json::parse(read_file(json_path));
    CHECK(doc.at("settings").at("complete") == true);
    REQUIRE(doc.at("fusion").size() == 6);  // each chain's first shape: 4 conv, 2 APMM
    int apmm_rows = 0, stride2_rows = 0;
    for (const json& r : doc.at("fusion")) {
      CHECK(r.at("checked").get<int64_t>() > 0);
      CHECK(r.at("mismatches") == 0);
      CHECK(r.at("unfused_differs") == 0);
      apmm_rows += r.at("kernel").get<std::string>().rfind("apmm", 0) == 0;
      stride2_rows += contains(r.at("kernel").get<std::string>(), "3x3/2");
    }
    CHECK(apmm_rows == 2);
    CHECK(stride2_rows == 1);
    CHECK(contains(read_file(chart_path), "<svg"));
    return;
  }
  const std::string json_path = sb.path("bench.json").string();
  const Result r = expect_error(sb, {"bench", "--quick", "--json", json_path}, 3, {});
  CHECK((contains(r.err, "no CUDA driver") || contains(r.err, "no CUDA device")));
  CHECK_FALSE(fs::exists(json_path));
}
