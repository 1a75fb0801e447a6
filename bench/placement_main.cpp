// apnn_bench_placement: does a conv kernel's time follow where its buffers land?
// Builds the bench's rotated input sets (engine/input_sets.h) after padding the device
// allocator with a buffer of each --pad-mb size, and times the kernel under the bench's rule.
// Written for the int16 halo kernels' two speeds (bench/NOTES.md, session 34): a time that
// holds across pads says the buffers' placement is not the cause.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "apnn/spec.h"
#include "engine/conv_runner.h"
#include "engine/epilogue_device.h"
#include "engine/input_sets.h"
#include "engine/tile_choice.h"
#include "generator/generate.h"
#include "runtime/device_buffer.h"
#include "runtime/steady_timing.h"

using namespace apnn;

int main(int argc, char** argv) {
  CLI::App app{"Time one conv spec with its input sets placed after device pads of several sizes"};
  std::string spec_path;
  ConvShape s;
  std::vector<double> pads_mb{0, 0, 1, 2, 4, 8, 16, 32, 64};
  std::vector<std::string> preload;
  app.add_option("spec", spec_path, "kernel spec (JSON file) of an apconv")->required();
  app.add_option("--batch", s.N, "input/output size")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 31));
  app.add_option("--in-channels", s.C, "input/output size")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 31));
  app.add_option("--height", s.H, "input/output size")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 31));
  app.add_option("--width", s.W, "input/output size")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 31));
  app.add_option("--out-channels", s.O, "input/output size")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 31));
  app.add_option("--pad-mb", pads_mb, "pad sizes in MB, each allocated before a fresh build of the input sets")
      ->check(CLI::Range(0.0, 65536.0));
  app.add_option("--preload", preload,
                 "apconv specs whose conv kernels are loaded first, in order (at this shape's tile where they have "
                 "none): they move where the timed kernel's code lands");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "apnn_bench_placement: %s\n", e.what());
    return 2;
  }
  try {
    auto parse = [](const std::string& path) {
      const KernelSpec spec = load_spec_file(path);  // not canonicalized: that would fill in a shapeless tile
      if (spec.op != Op::Apconv) throw Error(ErrorKind::InvalidInput, path + ": op: apnn_bench_placement times apconv specs");
      return spec;
    };
    // Every spec is read and checked before any driver call; then a spec without a tile gets
    // the one `apnn bench` and `apnn verify` would run at this shape.
    std::vector<KernelSpec> before;
    for (const std::string& p : preload) before.push_back(parse(p));
    KernelSpec spec = parse(spec_path);
    for (KernelSpec& b : before) b = resolve_tile(b, conv_problem(b, s), current_target());
    spec = resolve_tile(spec, conv_problem(spec, s), current_target());
    Engine engine;
    // Loaded and their conv kernels resolved (lazy loading uploads a kernel's code then), kept.
    std::vector<std::shared_ptr<Kernel>> kept;
    for (const KernelSpec& b : before) {
      kept.push_back(engine.kernel(b));
      kept.back()->module->function(kConvKernel);
      std::printf("preloaded %s\n", canonical_json(b).c_str());
    }
    std::printf("spec %s\n", canonical_json(spec).c_str());
    ConvRunner runner(engine.kernel(spec));
    const ConvGeometry g = conv_geometry(spec, s);
    const EpilogueDevice none;
    const TimingRule rule;
    for (double mb : pads_mb) {
      const DeviceBuffer pad(static_cast<size_t>(mb * (1 << 20)) + 256);
      ConvInputSets in(runner, spec, g, 0, 7);
      const Timing t = time_rotated(rule, in.sets(), [&](int set) { runner.conv(in.w[set], in.x[set], g, none, in.y[set]); });
      std::printf("pad %8.2f MB: %7.2f us over %d sets; set 0 at y %#llx, x %#llx, w %#llx\n", mb, t.us, in.sets(),
                  static_cast<unsigned long long>(in.y[0].values.ptr()), static_cast<unsigned long long>(in.x[0].planes.ptr()),
                  static_cast<unsigned long long>(in.w[0].planes.ptr()));
      std::fflush(stdout);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "apnn_bench_placement: %s\n", e.what());
    const ErrorKind k = e.kind();
    return k == ErrorKind::InvalidSpec || k == ErrorKind::InvalidInput || k == ErrorKind::Io ? 2 : 3;
  }
  return 0;
}
