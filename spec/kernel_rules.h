// What the APMM kernel family can run: plane-pair accumulator groups, legal
// tiles, and the default tile. Shared by spec validation and the generator. Defined in
// kernel_rules.cpp, the TMA core's in tma_rules.cpp and the halo core's in halo_rules.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "apnn/conv_layout.h"
#include "apnn/encoding.h"
#include "apnn/spec.h"

namespace apnn::rules {

// Plane pairs (s, t) whose products carry the same weight alpha_s*gamma_t share one
// accumulator set: p+q-1 sets for unsigned x unsigned instead of p*q.
struct PlaneGroups {
  std::vector<std::vector<int>> group_of;  // [s][t]
  std::vector<long long> weight;           // [group]
  std::vector<std::vector<int>> repeat;    // [s][t]: times the pair's MMAs are issued into its set
  bool folded = false;                     // folds_sets: one result set of weight 1, folded into each K step
  int mmas() const;                        // MMAs per K step: the sum of repeat
};
PlaneGroups plane_groups(const OperandFormat& w, const OperandFormat& x);
// Fewer sets for more MMAs: the pairs of one sign share a set whose weight is their smallest,
// each pair's MMAs issued weight/smallest times (all weights are powers of two). Taken where
// it adds at most half the MMAs (w1a2: 2 sets of 2 MMAs -> 1 set of 3; w2a2 signed: 4 -> 2
// sets, 6 MMAs); otherwise plane_groups.
PlaneGroups merged_plane_groups(const OperandFormat& w, const OperandFormat& x);
// The sets a canonical spec's kernel accumulates into on `arch`: merged on the wgmma conv
// core where that lets more blocks share an SM (conv_blocks_per_sm), which the batch convs'
// latency-bound blocks need more than MMAs (same-call bench, session 10, device call 6,
// where a layer's tiles still filled their waves: w2a2 n128-56x56x64 146.6 -> 122.3 us, w1a2
// n128-28x28x128 46.7 -> 42.6); plane_groups elsewhere (the GEMMs are bound by their MMAs),
// except as below.
//
// The wgmma APMM core instead takes one set per plane pair (pair_groups) where that lets a
// wgmma cover several X planes (wgmma_x_stack) and the accumulators still fit (w4a4's
// 128x16 tile: 16 sets of 8 registers instead of 10).
//
// Where the exact sets do not fit the TMA core's registers, or fill them without stacking on
// a tile of 64 columns or fewer, it folds them instead (folds_sets): one result set.
PlaneGroups kernel_plane_groups(const KernelSpec& spec, const std::string& arch);
// The TMA core's folded sets (templates/gemm_sm90a_tma.cuh, Traits::kFold): each K step's
// wgmmas of W plane s go into a temporary of its q stacked sets (one wgmma of N = q*bn a K
// slice), which is then added into a single result set with the pairs' weights (an IMAD an
// element), exact in wrapping 32-bit arithmetic as the final combine is. The accumulators are
// then q + 1 sets whatever p is, so high-precision pairs get the wide wgmmas that shared
// memory can feed (w4a4: 128x16 tiles of N = 64 wgmmas with a set per pair; folded, 128x64
// of N = 256). Where the exact sets (plane_groups) exceed kTmaMaxAccumulatorRegs, or exceed
// kTmaFoldAboveRegs on tiles of 64 columns or fewer and do not stack (wgmma_x_stack); on the
// TMA core (cluster > 1) with 8 warps in one column, 2 or more X planes (a single W plane's
// exact sets always fit), and q*bn a wgmma N. (Two temporaries, so that plane s's wgmmas
// could run while plane s-1 folds, were exact but ptxas serialized their wgmmas, C7514:
// bench/NOTES.md, session 37.)
bool folds_sets(const Tile& t, const OperandFormat& w, const OperandFormat& x);
// One set per plane pair, in (s, t) order: set s*q + t, weight alpha_s*gamma_t.
PlaneGroups pair_groups(const OperandFormat& w, const OperandFormat& x);
// X planes that one wgmma of the sm_90a cores covers (gemm_sm90a.cuh, Traits::kXStack): a
// warpgroup's columns of consecutive X planes lie bn rows apart in shared memory, so with
// one warpgroup along N they form one B operand, and where pair (s, t) has set s*q + t the
// sets form one accumulator. The largest divisor d of q whose wgmma N (d * bn) the
// instruction has (8, 16, 24, then steps of 16 up to 256), else 1. Same-call bench against
// unstacked wgmmas (session 14, device calls 1-2): w2a8 1.10-1.65x, w4a4 1.03-1.39x, w2a4
// 1.06-1.30x, w2a2 1.00-1.05x. With one W plane a K slice's wgmmas become one dependent
// chain: on the TMA core (cluster > 1) the outcome was mixed (8192^3 w1a2 / w1a3 / w1a4 1.02 /
// 1.05 / 1.02x, but 8192x2048x2048 w1a2 0.94x and w1a3 0.93x; w1a4 two planes a wgmma
// 0.97-1.01x), so it stacks there only for 2 or more W planes; on the cp.async core (the
// convs, call 9) the batch-128 w1a2 and w1a4 layers were 1.00-1.03x (n128-7x7x512 w1a2 20.19
// -> 19.52 us) and no large GEMM row moved.
int wgmma_x_stack(const Tile& t, const OperandFormat& w, const OperandFormat& x, const PlaneGroups& g);

inline constexpr int kMaxAccumulatorRegs = 128;           // per thread, for blocks of <= 256 threads
// A block of T threads gets at most 65536/T registers per thread (__launch_bounds__); keep
// 64 of them for fragments and addresses, or the accumulators spill (512 threads: 64).
inline constexpr int accumulator_limit(int threads) {
  return 65536 / threads - 64 < kMaxAccumulatorRegs ? 65536 / threads - 64 : kMaxAccumulatorRegs;
}
inline constexpr int kMaxSharedBytes = 227 * 1024;        // opt-in dynamic shared memory on sm_80/sm_90
inline constexpr int kMaxThreads = 512;

int accumulator_regs(const Tile& t, int groups);
// Blocks per SM a canonical conv spec's kernel (its tile set) asks registers for with
// `groups` accumulator sets (__launch_bounds__'s second argument): 2 for blocks of at most
// 256 threads whose accumulators take at most 64 registers, capping them at 128 per thread;
// else 1. A fused chain on the wgmma conv took 137 registers at 64x128 (one 256-thread block
// per SM: n128-56x56x64 w1a2+q2 552 us, session 5 device call 15); capped, 127 without
// spills (322 us, call 16). 3 where conv_three_blocks says so.
int conv_min_blocks(const KernelSpec& spec, const std::string& arch, int groups);
// Whether a canonical conv spec's kernel with this many accumulator registers asks for three
// blocks per SM (80 registers a thread): only the measured kernel that fits them without
// spills, w1 x a2 with unsigned activations on the wgmma core, plain output, 8x1 warps, 4
// stages of 512 bits, at most 32 accumulator registers (merged sets), where three blocks'
// shared memory fits. test_compiler compiles every such legal tile and checks ptxas spills none.
bool conv_three_blocks(const KernelSpec& spec, const std::string& arch, int accumulator_registers);
// Blocks of a canonical conv spec's kernel whose launch shared memory fits an SM at once.
int conv_smem_blocks(const KernelSpec& spec, const std::string& arch);
int shared_bytes(const Tile& t, const OperandFormat& w, const OperandFormat& x);
// Blocks of a canonical conv spec's kernel that fit an SM at once with these accumulator
// sets: its launch bounds (conv_min_blocks) and its shared memory on `arch`.
int conv_blocks_per_sm(const KernelSpec& spec, const std::string& arch, const PlaneGroups& groups);

// Empty string when legal, else the reason, naming the tile field and the allowed values.
std::string check_tile(const Tile& t, const OperandFormat& w, const OperandFormat& x);

// Warp grid for a tile given only bm/bn/bk/stages: the fewest warps (at least 4)
// that keep accumulators within budget. Returns false if none does.
bool choose_warps(Tile* t, const OperandFormat& w, const OperandFormat& x);

Tile default_tile(const OperandFormat& w, const OperandFormat& x);

// With a fused epilogue (apnn/epilogue.h) the block's outputs may be staged in shared memory
// (pooling windows, 32-channel packed words): bn*(bm+4) 4-byte values, reusing the pipeline's
// buffers, so a kernel needs the larger of the two; APConv adds its column table (bn*16).
int staging_bytes(const Tile& t, const Epilogue& e);
int kernel_shared_bytes(const Tile& t, const KernelSpec& spec);
// What the spec's epilogue asks of a tile (bm 32, 64 or 128 for quantize, a whole pooling
// window per bn, shared memory); empty when it fits. check_tile covers the mainloop.
std::string check_epilogue_tile(const Tile& t, const KernelSpec& spec);
std::string check_kernel_tile(const Tile& t, const KernelSpec& spec);  // both
Tile default_tile(const KernelSpec& spec);

// --- The sm_90a wgmma core of APMM and APConv (templates/gemm_sm90a.cuh) ---
// A legal tile (check_tile) suits it when its warps form warpgroups of 4 warps of 16 rows
// stacked along M (warps_m a multiple of 4, bm == 16*warps_m) and the columns per
// warpgroup, bn/warps_n, are a wgmma N (8..256); the core aligns its shared memory to
// 1024 bytes, so it asks for kWgmmaSmemSlack more. Empty string when it suits, else why not.
inline constexpr int kWgmmaSmemSlack = 1024;
std::string wgmma_tile_error(const Tile& t, const OperandFormat& w, const OperandFormat& x);
int wgmma_shared_bytes(const Tile& t, const OperandFormat& w, const OperandFormat& x);
// Whether the generator emits the wgmma core for a canonical spec on `arch`: sm_90a, APMM or
// APConv with any chain (with a cluster, an APMM chain on the TMA core), a tile that suits it
// (with a chain's staging and an APConv's column table in shared memory), and the variable
// APNN_DISABLE_WGMMA unset or "0" (the mma.sync core then runs the same tile, for comparisons).
bool use_wgmma(const KernelSpec& spec, const std::string& arch);
// Whether APNN_DISABLE_WGMMA asks for the mma.sync core (set, and not "0").
bool wgmma_disabled_by_env();
// The core a spec with a tile runs on for `arch`, by family: "mma.sync", "wgmma" (the
// cp.async-fed wgmma core), "wgmma-tma" (tile.cluster > 1) or "wgmma-halo" (tile.core halo);
// kCoreFamilies lists them (apnn tune --core, the bench's core column).
inline constexpr const char* kCoreFamilies[] = {"mma.sync", "wgmma", "wgmma-tma", "wgmma-halo"};
std::string core_family(const KernelSpec& spec, const std::string& arch);
// An APMM quantize chain on the wgmma core stages one code byte per output, bn columns of bm
// + 16 rows (templates/epilogue.cuh, quantized_store), in its own region after the pipeline
// (templates/apmm_sm90a.cuh); 0 for other chains.
int apmm_code_staging_bytes(const Tile& t, const Epilogue& e);
// How a chain's kernel writes the per-pixel sums of its quantized output (templates/
// epilogue.cuh), for O output channels (rows) where a block runs at most tiles_per_block
// tiles: Stored where one M tile holds them all (not on the halo core, whose readout has
// several threads a pixel, nor a pooled chain's, an add a 32-row chunk); Scratch, added up in
// the output's sum_scratch, which the kernel leaves zero, on the halo core and APMM's cp.async
// wgmma core (which settle each add under the block's next tile's mainloop; APMM on mma.sync
// runs a block a tile) and where blocks run at most kScratchTilesPerBlock tiles (the other
// convs and pooled chains: a tile a block); else ZeroedFirst, added to the sums the runner
// zeroes before the launch (the TMA core's longer persistent blocks); None without a quantize.
// Settled at once, the scratch waits for an atomic's round trip a tile (about 0.3 us); the
// memset costs a launch 1-3 us (bench/NOTES.md, session 43: 4 tiles a block gained 0.2-1.3
// us, 8 lost up to 2 us; session 44, settled a tile later: halo layers 0.7-5.2 us at 1-28
// tiles a block, APMM 0.2-2.8 us at 1-16; session 45: pooled chains 2.1-2.7 us).
inline constexpr int64_t kScratchTilesPerBlock = 4;
enum class SumsPath { None, Stored, Scratch, ZeroedFirst };
SumsPath quantize_sums_path(const KernelSpec& spec, int64_t O, int64_t tiles_per_block);
// Whether an APConv on the wgmma core runs as a persistent grid (at most a wave of blocks,
// each a contiguous share of the tiles) rather than one block per tile
// (templates/conv_sm90a.cuh): where p*q >= 8 and the chain does not stage its output.
bool conv_persistent(const KernelSpec& spec);
// A warp grid for a tile given only bm/bn/bk/stages that suits the wgmma core: warpgroups
// stacked along M (warps_m = bm/16), the fewest along N. Returns false if none does.
bool choose_wgmma_warps(Tile* t, const OperandFormat& w, const OperandFormat& x);
// Dynamic shared memory a canonical spec's main kernel is launched with on the core it was
// generated for (CompileResult::wgmma_core), or on the core use_wgmma predicts for `arch`.
int core_shared_bytes(const KernelSpec& spec, bool wgmma_core);
int launch_shared_bytes(const KernelSpec& spec, const std::string& arch);
// Whether spec's tile can be launched on `arch` within max_smem bytes of shared memory: legal
// for the spec (check_kernel_tile), a TMA-core tile (cluster > 1) only where the sm_90a wgmma
// core is on, a halo tile only on sm_90a, and its launch's bytes on the core it would run on.
bool launchable(const KernelSpec& spec, const std::string& arch, int max_smem);
// Whether the wgmma APMM cores (cp.async and TMA) stage their int32 output for bulk tensor stores
// in a pipeline slot (templates/apmm_sm90a.cuh, kTmaStore: 256 columns per warpgroup, and a
// slot that holds 16 KB per warpgroup; on the TMA core, whole-tile staging comes first where
// tma_output_staging_bytes allows it); the runner then encodes the output's tensor map. A
// mismatch costs only speed: without the map the kernel stores directly.
bool wgmma_stages_output(const Tile& t, const OperandFormat& w, const OperandFormat& x);

// --- The TMA-fed wgmma core (templates/gemm_sm90a_tma.cuh), tiles with cluster 2, 4 or 8 ---
// A cluster of cm x cn blocks computes a patch of neighbouring tiles: the cn blocks of one M
// tile share its W tile, the cm blocks of one N tile its X tile; each block loads 1/cn of
// the W tile and 1/cm of the X tile and multicasts them. Cluster 2 shares the larger operand
// tile (the X tile, cm = 2, when q*bn >= p*bm; else W's, cn = 2), cluster 4 both (2 x 2),
// cluster 8 both, the larger one four ways. Each block has a producer warp beside its
// consumer warps, and 2*stages mbarriers after its pipeline and output staging, then a word
// for the profiling timeline (templates/timeline.cuh; kTmaBarrierBytes covers them).
inline constexpr int kTmaBarrierBytes = 256;
// The TMA core's accumulators: up to 192 registers a thread. A block of 8 consumer warps
// and one producer warp gives a thread 168 registers (ptxas counts 9 warps as 12), which hold
// 128 accumulators; above that the producer is a warpgroup that hands its registers to the
// consumers (setmaxnreg: 40 for the producers, 232 for the consumers). The wider tiles this
// allows (w2a2 128x96, w1a2 128x192) read a sixth fewer operand bytes per MMA (bench/NOTES.md,
// "Session 21").
inline constexpr int kTmaMaxAccumulatorRegs = 192;
// Exact sets above this many registers a thread fold (folds_sets) where they do not stack and
// the tile is 64 columns or narrower (its unfolded wgmmas narrow). apnn verify, 1024x4096x4096
// / 8192x4096x4096, exact, us (session 39, calls 2-3; bench/NOTES.md): at 192 the fold won
// (unsigned w4a3 128x64/1024 46.88 / 319.50 unfolded, 39.34 / 279.58 folded; unsigned w8a5
// 128x32/512 184.96 / 1451.69, 147.79 / 1161.58; signed w3a6 x signed 128x32/1024 folded
// 57.92 / 433.52 against the 128x16 tile's 86.00 / 647.16), at 176 and 144 it lost (unsigned
// w6a6 128x32/512 137.94 / 1064.90 folded, 99.17 / 777.38 unfolded with 3 stages; unsigned w4a6
// 128x32/1024 68.69 / 521.45 against 72.54 / 543.63; unsigned w5a5 71.54 / 551.04 against
// 74.09 / 564.11), and on the wide 128x96 tile (N = 96 wgmmas) it lost at 192 (unsigned w3a2
// 8192^3 550.60 unfolded, 609.61 folded).
inline constexpr int kTmaFoldAboveRegs = 176;
// With one producer warp, the consumers' 168 registers hold at most this many accumulators in
// sets that are not stacked into one wgmma (a wgmma per X plane): above it ptxas spilled 32-224
// bytes (session 39), and a producer warpgroup gives them 232. apnn verify, exact, us (session
// 41, call 2; bench/NOTES.md), the cluster tile with one producer warp -> with a warpgroup (the
// cp.async core's tile): unsigned w4a5 128x32/512 1024x4096x4096 102.4 -> 59.9 (87.4), unsigned
// w7a2 128x32/512 1024x1024x1024 12.7 -> 7.9 (9.0), signed w8a3 x signed 128x16/512 256x2048x2048
// 30.2 -> 12.4 (16.0), unsigned w7a4 x signed 20.1 -> 12.9 (16.0); tiles that did not spill ran
// even (unsigned w2a3 and w3a2 128x64, unsigned w2a6 and signed w3a4 x signed 128x32 at
// 1024x4096x4096: 23.6 / 21.8 / 42.1 / 42.4 against 23.4 / 21.4 / 42.4 / 41.8).
inline constexpr int kTmaOneWarpUnstackedRegs = 96;
// Producer warps of the TMA core (templates/gemm_sm90a_tma.cuh): 0 off it, 4 where 8 consumer
// warps hold more than kMaxAccumulatorRegs accumulators (plane_groups' sets: the kernel's
// own sets are those, or one set per pair only where they fit kMaxAccumulatorRegs, or q + 1
// where it folds them: folds_sets), or, where a set per plane pair would not fit
// kMaxAccumulatorRegs, more than kTmaOneWarpUnstackedRegs in merged sets that it does not fold
// (these never stack: a wgmma per X plane), else 1. Tiles whose pair sets fit 128 registers
// keep one warp (w1a8 128x32, w1a4 128x64: no spills).
int tma_producer_warps(const Tile& t, const OperandFormat& w, const OperandFormat& x);
// Threads of a block running the tile: its warps, and the TMA core's producer warps.
int block_threads(const Tile& t, const OperandFormat& w, const OperandFormat& x);
bool cluster_shares_x(const Tile& t, const OperandFormat& w, const OperandFormat& x);
struct ClusterShape {
  int m = 1, n = 1;  // blocks along M (sharing an X tile) and along N (sharing a W tile)
};
ClusterShape cluster_shape(const Tile& t, const OperandFormat& w, const OperandFormat& x);
// Tile patches of the TMA core for an M x N output (templates/gemm_sm90a_tma.cuh, Patches):
// one per cluster step, cm x cn neighbouring tiles.
int64_t tma_patches(const Tile& t, const OperandFormat& w, const OperandFormat& x, int64_t M, int64_t N);
// The TMA core's output staging beside the pipeline (templates/apmm_sm90a.cuh), drained by
// bulk stores while the next tile computes, where the tile runs on the TMA core and its
// warpgroups' columns are whole 32-column boxes: the whole bm x bn tile of out_bytes
// elements (int32 4, int16 2; store_tile_staged) where it fits, else two boxes per warpgroup
// that its boxes take turns in (store_staged<true>), else 0 (the output is stored as on the
// cp.async core).
int tma_output_staging_bytes(const Tile& t, const OperandFormat& w, const OperandFormat& x, int out_bytes = 4);
inline constexpr int kTmaStagingBoxBytes = 64 * 128;  // one bulk store: 64 rows of 128 bytes (32 int32, 64 int16)
// Whether that staging is the whole tile (store_tile_staged) rather than two boxes a warpgroup.
bool tma_output_staged_whole(const Tile& t, const OperandFormat& w, const OperandFormat& x, int out_bytes);
// Pipeline, output staging and barriers.
int tma_shared_bytes(const Tile& t, const OperandFormat& w, const OperandFormat& x, int out_bytes = 4);
// For a spec on the TMA core: the output staging of its plain output (a chain's values are stored
// directly), and a quantize chain's codes after the barriers (apmm_code_staging_bytes).
int tma_spec_output_staging_bytes(const Tile& t, const KernelSpec& spec);
int tma_spec_shared_bytes(const Tile& t, const KernelSpec& spec);
// The bytes of an element of the spec's plain output: 2 for "output": "int16", else 4; and
// its name ("int16", "int32") for messages.
int output_element_bytes(const KernelSpec& spec);
const char* output_element_name(const KernelSpec& spec);
// The largest |w*x| of the spec's operand formats, and the largest |y| its plain output holds
// (32767 for int16, 2^31 - 1 for int32): a reduction over more than limit / product terms
// could leave the output's type, so the launch refuses it.
int64_t largest_product(const KernelSpec& spec);
int64_t output_limit(const KernelSpec& spec);
// output_limit / largest_product: the longest reduction the output holds (APConv's
// in-channels x kernel; APMM's K also stays below its indexing limit, apmm_max_k).
int64_t max_reduction(const KernelSpec& spec);
// Empty, or why the spec cannot have the int16 output it asks for (a chain sets its own
// output; a single product must fit int16): checked by the parser and again by the generator,
// for specs built in code.
std::string output_error(const KernelSpec& spec);
// Empty for cluster 1; otherwise why the TMA core cannot run the tile (op apmm, a chain or not,
// bk 1024 or 512, a wgmma tile, whole 8-row atoms in each block's part of a shared tile), naming
// the field.
std::string tma_tile_error(const Tile& t, const KernelSpec& spec);

// --- The halo core of APConv (templates/conv_sm90a_halo.cuh), tiles with "core": "halo" ---
// bm 128 (two consumer warpgroups, warps 8x1, and a producer warpgroup: 384 threads), bn the
// wgmma's N (a multiple of 16 up to 128: the tile's grid of rows x pw columns fits it), bk
// 256 (one k256 slice a wgmma), stages 2..8 (tiles in flight), cluster 1; 3x3 kernels with
// pad 1 or 1x1 kernels with pad 0, stride 1 or 2, chains without a pool, sm_90a. C pads to
// one 128-channel chunk a pixel or to 2, 4 or 6 (whole k256 slices; W's rows of every kernel
// position stay in shared memory): checked at launch (halo_launch_error).
inline constexpr int kHaloThreads = 384;
inline constexpr int kHaloMaxAccumulatorRegs = 128;  // of the 232 a consumer takes (setmaxnreg)
// Empty when tile t (halo) is legal for formats w, x; else why not, naming the field.
std::string halo_tile_error(const Tile& t, const OperandFormat& w, const OperandFormat& x);
// The same with the spec's op, kernel, stride, pad and chain.
std::string halo_kernel_error(const Tile& t, const KernelSpec& spec);
// A launch's grid (templates/conv_sm90a_halo.cuh, HaloGeometry): pw columns a row (Wo + 2 at
// stride 1, Wo + 1 at stride 2, Wo for a 1x1 kernel), rows = min(Ho, bn / pw) output rows a
// tile (0 where not even one row fits bn), ceil(Ho / rows) tiles an image, the box's input
// rows (a phase's at stride 2), and its shared memory rounded up to the 128 bytes bulk copies need.
struct HaloGeometry {
  int pw = 0, rows = 0, row_tiles = 0, box_rows = 0, slot_bytes = 0;
};
// Grid rows of Wo plus the halo columns, rounded up to a multiple of align.
HaloGeometry halo_geometry(const ConvParams& conv, int64_t Ho, int64_t Wo, int bn, int align = 1);
// The launch's blocks: each keeps one M tile of 128 output channels (its W stays in shared
// memory) and takes a share of that M tile's `tiles` (image, row block) pairs, at most one
// block an SM: M tiles x min(halo_sms_per_m_tile, tiles). Valid where M tiles <= SMs.
int64_t halo_sms_per_m_tile(int64_t O, int sm_count);
int64_t halo_grid(int64_t O, int64_t tiles, int sm_count);
// The bytes of a row of W's and X's boxes (their tensor maps' inner box and swizzle span),
// from the 128-channel chunks of a pixel (conv_layout.h pads C to them): 64 (two k256
// slices, the 64-byte swizzle) where the slices pair up, 16 for one chunk (one position's or
// pixel's channels, no swizzle: its slices pair two positions), else 32 (one slice, the
// 32-byte swizzle). The kernel's ConvSm90aHalo::row_bytes makes the same choice from its slices.
// A pixel's 16-byte chunks of packed channels (its words, conv_layout.h, padding in).
inline constexpr int64_t halo_chunks(int64_t C) { return conv_channel_words(C) / 4; }
inline constexpr int halo_row_bytes(int64_t C) {
  return halo_chunks(C) == 1 ? 16 : halo_chunks(C) % 4 == 0 ? 64 : 32;
}
// Dynamic shared memory of a launch with C input channels: 1024 for alignment, W (p planes x
// the kernel's 9 or 1 positions x the padded chunks' 16 bytes x 128 rows, and at one chunk a
// zero box), the stages (q planes x phases (4 for a 3x3 kernel at stride 2, else 1) x chunks
// boxes), the two warpgroups' output staging, and the barriers.
int64_t halo_shared_bytes(const KernelSpec& spec, int64_t C, const HaloGeometry& geo);
// Whether the halo kernel writes its plain output through the copy engine: a warpgroup's
// 64 channels x the tile's rows x Wo pixels staged densely and stored as one box of a tensor
// map over (Ho*Wo, O, N) (templates/conv_sm90a_halo.cuh, kMapOut). Where the chain has no ops,
// X has no offset term (its corrections are one per column), the grid's rows and Wo are even
// (a fragment's column pairs stay together), the box's rows of rows*Wo elements are whole 16
// bytes and at most 256 elements, a channel's Ho*Wo elements are whole 16 bytes, and the
// grid's rows are whole 8 columns (a fragment's 8-column group stays on one row).
bool halo_output_map(const KernelSpec& spec, int64_t Ho, int64_t Wo, const HaloGeometry& geo);
// The geometry a launch of spec runs: its rows padded to 8 columns where that keeps the rows
// a tile and lets the output go through a map (halo_output_map), else halo_geometry's.
HaloGeometry halo_launch_geometry(const KernelSpec& spec, int64_t Ho, int64_t Wo);
// Empty when the halo kernel of spec can run a conv of this size on a device with max_smem
// and sm_count; else why not (C, more M tiles than SMs, a grid row wider than bn or than a
// box may be, shared memory), naming the size.
std::string halo_launch_error(const KernelSpec& spec, int64_t C, int64_t O, int64_t Ho, int64_t Wo, int max_smem,
                              int sm_count);

// A wgmma tile for a precision: 2 warpgroups along M (bm 128, 256 threads), the widest
// per-warpgroup N the accumulator budget allows, the deepest K step and pipeline that fit.
// Returns false if none fits.
bool wgmma_tile(Tile* t, const OperandFormat& w, const OperandFormat& x);

}  // namespace apnn::rules

namespace apnn::rules {

// The tile for a spec without one, given the problem: the paper's TLP/CI rule (section
// 4.3: raise compute intensity while the block count TLP stays above a threshold), fitted
// to what `apnn tune` measured on the H100 (bench/NOTES.md, "Heuristic"):
//   - the threshold is one wave (`wave` = the SM count; 90% of it, the last wave may be short),
//   - the M side is fixed first: bm = 64 (128 when M > 512), smaller only when M is,
//     with its warps stacked along M (16 rows each; along N 1 warp for bn 8, 2 for 16,
//     16 columns a warp above, at most 8 warps),
//   - intensity is raised along N: the widest bn in 8..128 whose TLP still fills a wave;
//     when none does, bn = 8 (the most blocks),
//   - bk: the widest of 1024, 512 bits whose padding adds at most 25% to K, else 256;
//     3 stages where shared memory allows.
// A smaller bm is tried when no bn is legal at the preferred one (registers, epilogue).
Tile heuristic_tile(const OperandFormat& w, const OperandFormat& x, int64_t M, int64_t N, int64_t K_bits, int64_t wave,
                    int max_smem = kMaxSharedBytes);
// The same among the tiles the spec's epilogue allows.
Tile heuristic_tile(const KernelSpec& spec, int64_t M, int64_t N, int64_t K_bits, int64_t wave,
                    int max_smem = kMaxSharedBytes);

}  // namespace apnn::rules
