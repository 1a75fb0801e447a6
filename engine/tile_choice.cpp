#include "engine/tile_choice.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "apnn/error.h"
#include "apnn/tuning.h"
#include "compiler/nvrtc_compiler.h"
#include "engine/conv_runner.h"
#include "engine/tile_fit.h"
#include "runtime/device.h"
#include "spec/kernel_rules.h"

namespace apnn {

using tile_fit::fits;
using tile_fit::with_tile;

Target current_target() {
  const DeviceInfo& d = current_device();
  return {d.arch(), d.name, d.sm_count, d.max_smem_optin};
}

Target nominal_target(const std::string& arch) {
  check_arch(arch);
  if (arch == "sm_80") return {arch, "nominal A100", 108, 163 * 1024};
  if (arch == "sm_86") return {arch, "nominal RTX 3090", 82, 99 * 1024};
  if (arch == "sm_89") return {arch, "nominal RTX 4090", 128, 99 * 1024};
  return {arch, "nominal H100 SXM", 132, 227 * 1024};
}

Problem apmm_problem(const ApmmShape& s) { return {s.M, s.N, s.K, {{"m", s.M}, {"n", s.N}, {"k", s.K}}}; }

Problem conv_problem(const KernelSpec& spec, const ConvShape& s) {
  const ConvGeometry g = conv_geometry(spec, s);
  // K as loaded: channels are padded to 128 bits per pixel (conv_layout.h).
  return {g.O, g.N * g.Ho() * g.Wo(), g.kh * g.kw * conv_channel_words(g.C) * 32,
          {{"batch", s.N}, {"in_channels", s.C}, {"height", s.H}, {"width", s.W}, {"out_channels", s.O}}};
}

const char* tile_source_name(TileSource s) {
  switch (s) {
    case TileSource::Spec: return "spec";
    case TileSource::Tuned: return "tuned";
    case TileSource::Untuned: return "untuned";
  }
  return "?";
}

KernelSpec resolve_tile(const KernelSpec& spec, const Problem& p, const Target& t, TileSource* source) {
  TileSource ignored;
  TileSource& from = source ? *source : ignored;
  from = TileSource::Spec;
  if (spec.tile) return spec;
  const TuningDb db(TuningDb::default_path());
  if (auto tuned = db.lookup(make_tune_key(spec, t.arch, t.device, p.shape)); tuned && fits(spec, tuned->tile, t)) {
    from = TileSource::Tuned;
    return with_tile(spec, tuned->tile);
  }
  from = TileSource::Untuned;
  return with_tile(spec, untuned_tile(spec, p, t));
}

Tile untuned_tile(const KernelSpec& s, const Problem& p, const Target& t) {
  if (const std::optional<Tile> halo = untuned_halo_tile(s, p, t)) return *halo;
  return untuned_default_core_tile(s, p, t);
}

Tile untuned_default_core_tile(const KernelSpec& s, const Problem& p, const Target& t) {
  return s.op == Op::Apmm ? untuned_apmm_tile(s, p, t) : untuned_conv_tile(s, p, t);
}

namespace {

// Resolutions already made by this process, dropped whenever the tuning database file
// changes (another process ran apnn tune): the launch path then costs a stat, not a
// database read and a heuristic search.
struct TileMemo {
  std::mutex mu;
  std::unordered_map<std::string, Tile> tiles;
  std::filesystem::path db;
  std::filesystem::file_time_type stamp{};
  int stat_error = -1;
};

}  // namespace

KernelSpec with_tile_for(const KernelSpec& spec, const Problem& p) {
  if (spec.tile) return spec;
  static TileMemo memo;
  const std::filesystem::path db = TuningDb::default_path();
  std::error_code ec;
  const auto stamp = std::filesystem::last_write_time(db, ec);
  const std::string key = spec_id(spec) + p.shape.dump();
  {
    std::lock_guard<std::mutex> lock(memo.mu);
    if (db != memo.db || stamp != memo.stamp || ec.value() != memo.stat_error) {
      memo.tiles.clear();
      memo.db = db;
      memo.stamp = stamp;
      memo.stat_error = ec.value();
    }
    if (auto it = memo.tiles.find(key); it != memo.tiles.end()) {
      KernelSpec s = spec;
      s.tile = it->second;
      return s;
    }
  }
  KernelSpec s = resolve_tile(spec, p, current_target());
  std::lock_guard<std::mutex> lock(memo.mu);
  memo.tiles.emplace(key, *s.tile);
  return s;
}

void check_tile_fits_device(const KernelSpec& spec) {
  const DeviceInfo& dev = current_device();
  const Tile& t = *spec.tile;
  const int smem = rules::launch_shared_bytes(spec, dev.arch());
  if (smem > dev.max_smem_optin)
    throw Error(ErrorKind::InvalidInput,
                fmt::format("tile bm={} bn={} bk={} stages={} needs {} bytes of shared memory for w{}a{}; {} allows {} per "
                            "block: use a smaller tile, bk or fewer stages",
                            t.bm, t.bn, t.bk, t.stages, smem, spec.w.bits, spec.x.bits, dev.name, dev.max_smem_optin));
}

}  // namespace apnn
