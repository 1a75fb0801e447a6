// A kernel request: what to compute (op, operand formats) and how (tile).
// Parsed strictly from JSON: unknown fields and out-of-range values are errors
// that name the field and the allowed values (ErrorKind::InvalidSpec).
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "apnn/encoding.h"
#include "apnn/epilogue.h"

namespace apnn {

enum class Op { Apmm, Apconv };

// Block tile of the output (bm x bn), K step in bits (bk), pipeline depth and warp grid.
// cluster 2, 4 or 8: the tile runs on the TMA-fed wgmma core (sm_90a APMM, bk 1024 or 512), where a
// cluster of blocks computing neighbouring tiles shares operand tiles through multicast.
// halo ("core": "halo"): an APConv tile on the halo core (sm_90a, templates/conv_sm90a_halo.cuh):
// bn output columns of a grid of whole output rows, each tile's input loaded once.
struct Tile {
  int bm = 64, bn = 64, bk = 512;
  int stages = 3;
  int warps_m = 2, warps_n = 4;
  int cluster = 1;
  bool halo = false;
  bool operator==(const Tile& o) const {
    return bm == o.bm && bn == o.bn && bk == o.bk && stages == o.stages && warps_m == o.warps_m && warps_n == o.warps_n &&
           cluster == o.cluster && halo == o.halo;
  }
};

// The tile's JSON object (the spec's "tile" field; "cluster" only when it is not 1, "core"
// only for the halo core), and the unchecked reverse for records this library wrote itself
// (the tuning database).
nlohmann::json tile_to_json(const Tile& t);
Tile tile_from_json_unchecked(const nlohmann::json& t);

// APConv geometry fixed at compile time (batch, channels and spatial sizes are run-time).
struct ConvParams {
  int kh = 3, kw = 3;  // kernel, 1..11
  int sh = 1, sw = 1;  // stride, 1..4
  int ph = 0, pw = 0;  // zero padding, 0..3
  bool operator==(const ConvParams& o) const {
    return kh == o.kh && kw == o.kw && sh == o.sh && sw == o.sw && ph == o.ph && pw == o.pw;
  }
};

struct KernelSpec {
  Op op = Op::Apmm;
  ConvParams conv;  // op == Apconv only
  OperandFormat w{1, Encoding::Pm1};
  OperandFormat x{2, Encoding::Unsigned};
  std::optional<Tile> tile;  // absent: the library chooses (see canonicalize)
  Epilogue epilogue;         // fused output chain (apnn/epilogue.h); empty: int32 output
};

// Throws Error(InvalidSpec) naming the field. `origin` (a file name) prefixes messages.
KernelSpec parse_spec(const nlohmann::json& j, std::string_view origin = "spec");
KernelSpec parse_spec_text(std::string_view text, std::string_view origin = "spec");
// Reads and parses a spec file: Error(Io) if unreadable, Error(InvalidSpec) if invalid.
KernelSpec load_spec_file(const std::string& path);

// Defaults filled (the tile chosen when absent); what cache keys and logs use.
KernelSpec canonicalize(const KernelSpec& spec);
nlohmann::json to_json(const KernelSpec& spec);
std::string canonical_json(const KernelSpec& spec);  // canonicalize + compact dump, keys sorted
// A short identity of a canonical spec (every field, no JSON): the in-process table's key,
// cheap enough for every launch request.
std::string spec_id(const KernelSpec& canonical);

const char* op_name(Op op);

}  // namespace apnn
