// Prewarm (engine/prewarm.h, `apnn prewarm`) without a GPU: the example models' kernels for
// sm_90a (nominal_target) compile into the suite's own cache, once; everything else reuses it.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include "run_cli.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "apnn/model.h"
#include "apnn/tuning.h"
#include "engine/prewarm.h"
#include "engine/tile_choice.h"
#include "test_util.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kModels[] = {"resnet18_w1a2", "alexnet_w1a2", "vgg_variant_w1a2"};

std::string model_path(const std::string& name) { return std::string(APNN_SOURCE_DIR) + "/models/" + name + ".json"; }

// The suite's cache (APNN_CACHE_DIR=<dir>/cache, no tuning database) and the cold prewarm of
// the three models into it, in order, with 2 threads: done once, on first use.
struct Shared {
  ScratchDir scratch{"apnn-prewarm-test"};
  const fs::path& dir = scratch.path();
  std::map<std::string, apnn::Model> models;
  std::map<std::string, apnn::PrewarmReport> cold;
  std::vector<std::set<std::string>> seen_before;  // canonical specs of the models prewarmed earlier

  Shared() {
    ::setenv("APNN_CACHE_DIR", cache().c_str(), 1);
    ::unsetenv("APNN_CACHE_MAX_BYTES");
    ::unsetenv("APNN_TUNING_DB");
    std::set<std::string> seen;
    for (const char* name : kModels) {
      models.emplace(name, apnn::load_model_file(model_path(name)));
      seen_before.push_back(seen);
      apnn::Engine engine;
      cold.emplace(name, apnn::prewarm(engine, models.at(name), apnn::nominal_target("sm_90a"), 2));
      for (const auto& r : cold.at(name).rows) seen.insert(r.canonical);
    }
  }
  fs::path cache() const { return dir / "cache"; }
};

Shared& shared() {
  static Shared s;
  return s;
}



bool driver_loadable() {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) ::dlclose(h);
  return h != nullptr;
}

using Result = CliResult;

// Runs the apnn binary in the source directory with the suite's cache and no tuning database.
Result run_cli(const std::vector<std::string>& args) {
  return run_apnn(args, APNN_SOURCE_DIR, shared().cache(), shared().dir);
}

// Exit `code`, nothing on stdout, one stderr line containing every needle.
void expect_error(const std::vector<std::string>& args, int code, std::initializer_list<std::string> needles) {
  const Result r = run_cli(args);
  INFO(describe(args, r));
  CHECK(r.code == code);
  CHECK(r.out.empty());
  CHECK(lines_of(r.err).size() == 1);
  for (const auto& n : needles) CHECK_MESSAGE(contains(r.err, n), "stderr lacks '" << n << "'");
}

const apnn::PrewarmKernel* row_of(const apnn::PrewarmReport& r, const std::string& layer) {
  for (const auto& k : r.rows)
    for (const auto& l : k.layers)
      if (l == layer) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("prewarm: the example models compile every distinct kernel into the cache for sm_90a without a GPU") {
  Shared& s = shared();
  const apnn::Target target = apnn::nominal_target("sm_90a");
  std::set<std::string> all;
  for (size_t mi = 0; mi < std::size(kModels); ++mi) {
    const std::string name = kModels[mi];
    INFO(name);
    const apnn::Model& m = s.models.at(name);
    const apnn::PrewarmReport& r = s.cold.at(name);
    MESSAGE(name << ": " << r.layers << " layers, " << r.kernels << " distinct kernels, " << r.misses << " compiled, "
                 << r.hits << " hits (shared with the models before), " << r.seconds << " s cold (2 threads)");
    CHECK(r.model == name);
    CHECK(r.arch == "sm_90a");
    CHECK(r.device == target.device);
    CHECK(r.threads == 2);
    CHECK(r.layers == m.layers.size());
    CHECK(r.kernels == r.rows.size());
    CHECK(r.hits + r.misses == r.kernels);
    CHECK(r.kernels <= r.layers);

    // Every layer is in exactly one row: the one of its resolved spec's canonical JSON.
    size_t used = 0;
    std::set<std::string> canon;
    for (const auto& k : r.rows) {
      used += k.layers.size();
      canon.insert(k.canonical);
      CHECK(k.spec.tile.has_value());
      CHECK(apnn::canonical_json(k.spec) == k.canonical);
      CHECK(std::regex_match(k.key, std::regex("[0-9a-f]{32}")));
      CHECK(fs::exists(s.cache() / "sm_90a" / (k.key + ".apnnc")));
      // Cold: compiled unless an earlier model had the same kernel.
      CHECK(k.hit == (s.seen_before[mi].count(k.canonical) == 1));
      CHECK((k.hit ? k.compile_ms == 0 : k.compile_ms > 0));
    }
    CHECK(used == r.layers);
    CHECK(canon.size() == r.kernels);
    for (const auto& l : m.layers) {
      const apnn::Problem p =
          l.spec.op == apnn::Op::Apconv ? apnn::conv_problem(l.spec, l.conv) : apnn::apmm_problem(l.apmm);
      const apnn::PrewarmKernel* k = row_of(r, l.name);
      REQUIRE(k != nullptr);
      CHECK(k->canonical == apnn::canonical_json(apnn::resolve_tile(l.spec, p, target)));
    }
    all.insert(canon.begin(), canon.end());
  }
  CHECK(cache_entries(s.cache()) == all.size());

  // ResNet-18's identical layers share a kernel; a block's conv1 (chain to 2-bit) and conv2
  // (chain to float, before the residual add) differ; the first layer (8-bit input) has its own.
  const apnn::PrewarmReport& res = s.cold.at("resnet18_w1a2");
  CHECK(row_of(res, "layer1.0.conv1") == row_of(res, "layer1.1.conv1"));
  CHECK(row_of(res, "layer4.0.conv2") == row_of(res, "layer4.1.conv2"));
  CHECK(row_of(res, "layer1.0.conv1") != row_of(res, "layer1.0.conv2"));
  CHECK(row_of(res, "conv1")->layers.size() == 1);
  CHECK(res.misses == res.kernels);
}

TEST_CASE("prewarm: a second prewarm is all cache hits, compiles nothing and is much faster") {
  Shared& s = shared();
  const size_t entries = cache_entries(s.cache());
  for (const char* name : kModels) {
    INFO(name);
    apnn::Engine engine;  // a fresh engine: hits come from the disk cache
    const apnn::PrewarmReport warm = apnn::prewarm(engine, s.models.at(name), apnn::nominal_target("sm_90a"), 2);
    const apnn::PrewarmReport& cold = s.cold.at(name);
    CHECK(warm.kernels == cold.kernels);
    CHECK(warm.hits == warm.kernels);
    CHECK(warm.misses == 0);
    REQUIRE(warm.rows.size() == cold.rows.size());
    for (size_t i = 0; i < warm.rows.size(); ++i) {
      CHECK(warm.rows[i].canonical == cold.rows[i].canonical);
      CHECK(warm.rows[i].key == cold.rows[i].key);
      CHECK(warm.rows[i].layers == cold.rows[i].layers);
      CHECK(warm.rows[i].hit);
      CHECK(warm.rows[i].compile_ms == 0);
    }
    CHECK(engine.counters().compiles == 0);
    MESSAGE(std::string(name) << ": cold " << cold.seconds << " s, warm " << warm.seconds << " s");
    if (std::string(name) == "resnet18_w1a2") CHECK(warm.seconds * 5 < cold.seconds);
  }
  CHECK(cache_entries(s.cache()) == entries);
}

TEST_CASE("prewarm: progress events come one at a time, Started then Finished for every kernel") {
  Shared& s = shared();
  const apnn::Model& m = s.models.at("resnet18_w1a2");
  std::atomic<int> inside{0};
  std::vector<int> started, finished;
  size_t last_done = 0;
  bool overlapped = false, monotonic = true;
  apnn::Engine engine;
  const apnn::PrewarmReport r =
      apnn::prewarm(engine, m, apnn::nominal_target("sm_90a"), 2, [&](const apnn::PrewarmEvent& e) {
        if (inside.fetch_add(1) != 0) overlapped = true;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (e.done < last_done) monotonic = false;
        last_done = e.done;
        CHECK(e.total == s.cold.at("resnet18_w1a2").kernels);
        CHECK((e.kernel != nullptr && !e.kernel->layers.empty()));
        CHECK_FALSE(e.failed);
        (e.kind == apnn::PrewarmEvent::Kind::Started ? started : finished).push_back(static_cast<int>(e.index));
        inside.fetch_sub(1);
      });
  CHECK_FALSE(overlapped);
  CHECK(monotonic);
  CHECK(last_done == r.kernels);
  std::sort(started.begin(), started.end());
  std::sort(finished.begin(), finished.end());
  std::vector<int> all(r.kernels);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  CHECK(started == all);
  CHECK(finished == all);

  // threads 0: the hardware's concurrency, never more threads than kernels.
  apnn::Engine engine2;
  const apnn::PrewarmReport r0 = apnn::prewarm(engine2, m, apnn::nominal_target("sm_90a"), 0);
  CHECK(r0.threads >= 1);
  CHECK(r0.threads <= r0.kernels);
  CHECK(r0.misses == 0);
}

TEST_CASE("prewarm: a recorded tuning winner is the tile prewarm compiles") {
  Shared& s = shared();
  const apnn::Target target = apnn::nominal_target("sm_90a");
  const apnn::Model m = apnn::parse_model(
      json::parse(R"({"model": "one", "version": 1, "layers": [{"name": "fc", "spec": {"op": "apmm", "w_bits": 1,
        "w_enc": "pm1", "x_bits": 2, "x_enc": "unsigned"}, "shape": {"m": 1000, "n": 8, "k": 512}}]})"),
      "one.json");
  const apnn::ModelLayer& l = m.layers.front();
  const apnn::Problem p = apnn::apmm_problem(l.apmm);
  const apnn::Tile heuristic = *apnn::resolve_tile(l.spec, p, target).tile;
  // A valid tile other than the heuristic's.
  apnn::Tile tuned;
  bool found = false;
  for (const char* t : {R"({"bm": 128, "bn": 64, "bk": 512})", R"({"bm": 64, "bn": 32, "bk": 256})"}) {
    json spec = apnn::to_json(l.spec);
    spec["tile"] = json::parse(t);
    const apnn::Tile candidate = *apnn::parse_spec(spec).tile;
    if (!(candidate == heuristic)) {
      tuned = candidate;
      found = true;
      break;
    }
  }
  REQUIRE(found);
  const fs::path db_path = s.dir / "tuning-test.json";
  ::setenv("APNN_TUNING_DB", db_path.c_str(), 1);
  apnn::TuningDb(db_path).record(apnn::make_tune_key(l.spec, target.arch, target.device, p.shape), {tuned, 1.0});
  apnn::Engine engine;
  const apnn::PrewarmReport r = apnn::prewarm(engine, m, target, 1);
  ::unsetenv("APNN_TUNING_DB");
  REQUIRE(r.rows.size() == 1);
  CHECK(*r.rows[0].spec.tile == tuned);
  CHECK(r.misses == 1);  // not the heuristic's kernel, which the suite has compiled already
}

TEST_CASE("prewarm: a kernel that fails is reported after the others, naming its layers") {
  const apnn::Model m = apnn::parse_model(json::parse(R"({"model": "two", "version": 1, "layers": [
        {"name": "a", "spec": {"op": "apmm", "w_bits": 1, "w_enc": "pm1", "x_bits": 2, "x_enc": "unsigned"}, "shape": {"m": 64, "n": 64, "k": 256}},
        {"name": "b", "spec": {"op": "apmm", "w_bits": 1, "w_enc": "pm1", "x_bits": 2, "x_enc": "unsigned"}, "shape": {"m": 64, "n": 64, "k": 256}}]})"),
                                          "two.json");
  apnn::Target bad = apnn::nominal_target("sm_90a");
  bad.arch = "sm_99";  // every compile throws: NVRTC has no such target
  apnn::Engine engine;
  size_t failures = 0;
  try {
    apnn::prewarm(engine, m, bad, 2, [&](const apnn::PrewarmEvent& e) { failures += e.failed; });
    FAIL("no error");
  } catch (const apnn::Error& e) {
    CHECK(e.kind() == apnn::ErrorKind::InvalidInput);
    CHECK(contains(e.what(), "two: kernel of layers 'a', 'b'"));
    CHECK(contains(e.what(), "sm_99"));
  }
  CHECK(failures == 1);
}

TEST_CASE("prewarm cli: resnet18 for sm_90a with --json: exit 0 and the counts; the summary line") {
  Shared& s = shared();
  const apnn::PrewarmReport& cold = s.cold.at("resnet18_w1a2");
  const std::vector<std::string> args = {"prewarm", "models/resnet18_w1a2.json", "--arch", "sm_90a", "--json"};
  Result r = run_cli(args);
  INFO(describe(args, r));
  REQUIRE(r.code == 0);
  REQUIRE(lines_of(r.out).size() == 1);
  const json j = json::parse(r.out);
  CHECK(j.at("model") == "resnet18_w1a2");
  CHECK(j.at("arch") == "sm_90a");
  CHECK(j.at("layers") == 21);
  CHECK(j.at("kernels") == cold.kernels);
  CHECK(j.at("hits") == cold.kernels);  // the suite's cache has them all
  CHECK(j.at("misses") == 0);
  CHECK(j.at("seconds").get<double>() >= 0);
  REQUIRE(j.at("per_kernel").size() == cold.kernels);
  for (size_t i = 0; i < cold.kernels; ++i) {
    const json& k = j.at("per_kernel")[i];
    CHECK(k.at("key") == cold.rows[i].key);
    CHECK(k.at("spec") == json::parse(cold.rows[i].canonical));
    CHECK(k.at("layers") == cold.rows[i].layers);
    CHECK(k.at("cache") == "hit");
  }
  // Not a terminal: one plain progress line per kernel on stderr.
  const auto progress = lines_of(r.err);
  CHECK(progress.size() == cold.kernels);
  for (const auto& line : progress) CHECK(std::regex_match(line, std::regex(R"(\[\d+/\d+\] \S+.*: cache hit)")));

  const std::vector<std::string> plain = {"prewarm", model_path("alexnet_w1a2"), "--arch", "sm_90a", "--threads", "1"};
  r = run_cli(plain);
  INFO(describe(plain, r));
  CHECK(r.code == 0);
  REQUIRE(lines_of(r.out).size() == 1);
  const apnn::PrewarmReport& a = s.cold.at("alexnet_w1a2");
  CHECK(std::regex_match(lines_of(r.out)[0], std::regex("prewarmed alexnet_w1a2: 8 layers, " +
                                                        std::to_string(a.kernels) + " distinct kernels, " +
                                                        std::to_string(a.kernels) + " hits, 0 compiled, [0-9.]+ s")));
}

TEST_CASE("prewarm cli: bad input exits 2 with one line; no GPU and no --arch exits 3") {
  Shared& s = shared();
  const size_t entries = cache_entries(s.cache());
  json bad = json::parse(read_file(model_path("resnet18_w1a2")));
  bad["layers"][1]["shape"]["height"] = 0;
  const fs::path bad_path = s.dir / "bad_model.json";
  std::ofstream(bad_path) << bad.dump(1);
  expect_error({"prewarm", bad_path.string(), "--arch", "sm_90a"}, 2,
               {"bad_model.json", "layer 2 'layer1.0.conv1'", "shape.height"});
  expect_error({"prewarm", (s.dir / "absent.json").string(), "--arch", "sm_90a"}, 2, {"absent.json"});
  expect_error({"prewarm", "models/resnet18_w1a2.json", "--arch", "sm_99"}, 2, {"sm_99"});
  expect_error({"prewarm", "models/resnet18_w1a2.json", "--arch", "sm_90a", "--threads", "0"}, 2, {"--threads"});
  expect_error({"prewarm"}, 2, {"model"});
  CHECK(cache_entries(s.cache()) == entries);

  if (driver_loadable()) {
    MESSAGE("libcuda.so.1 is loadable here: the no-GPU check does not apply");
    return;
  }
  expect_error({"prewarm", "models/resnet18_w1a2.json"}, 3, {"--arch"});
  CHECK(cache_entries(s.cache()) == entries);
}
