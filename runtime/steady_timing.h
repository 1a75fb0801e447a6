// The one timing rule of apnn: `apnn bench` (ours and the vendor's alike), `apnn tune` and
// `apnn verify` all time kernels with it. CUDA events around back-to-back launches after a
// warm-up, the median of repeats, cycling through several input buffer sets so that the L2
// cache holds none of them between two uses of one.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>


namespace apnn {

struct Timing {
  double us = 0;     // median per-launch time
  int launches = 0;  // back-to-back launches per repeat
  int repeats = 0;
  int sets = 0;      // input buffer sets cycled through
};

struct TimingRule {
  int launches = 50;          // back-to-back launches per repeat (--launches)
  int repeats = 5;
  double warmup_ms = 50;      // the H100 idles near 345 MHz: run this long before timing
  double max_repeat_ms = 100; // long kernels: fewer launches per repeat, then fewer repeats
};

// Launches and repeats for a kernel that takes `est_us`: the rule's, cut so that one repeat
// lasts about max_repeat_ms (at least 3 launches), and 3 repeats for kernels over 10 ms.
Timing plan_timing(const TimingRule& rule, double est_us);

// How many buffer sets of `set_bytes` to cycle: enough to span 4x the L2 cache, 2 to 32.
int rotation_sets(size_t set_bytes, size_t l2_bytes);
size_t l2_bytes();  // of the current device

// launch(i) launches once on buffer set i (0 <= i < sets), asynchronously.
//
// The warm-up doubles its batches until it has run warmup_ms in all and one batch alone ran
// for half of that without a host synchronization: after a CPU-bound phase (reference
// check, packing) the clocks have dropped, and short synchronized bursts did not always
// bring them back (device run 1: isolated rows 3-5x slow). Warm-up and repeats then run
// twice, and the lower median counts (device run 2 still had a few whole rows 2-4x slow that
// a re-run did not reproduce); a third time when the second's repeats spread over 20%.
//
// give_up_us > 0: when the warm-up's own estimate exceeds it, that estimate is returned at
// once (repeats = 0): a tuning sweep need not time precisely what cannot win.
Timing time_rotated(const TimingRule& rule, int sets, const std::function<void(int)>& launch, double give_up_us = 0);

// Whether repeats (per-launch times) spread too much to trust their median.
bool unsteady(std::vector<double> per_launch);

// Times `candidates` alternatives (algorithms, engine configs) selected with use(i): one
// warm-up, then 3 rounds over all candidates in turn, so that a clock still rising favours
// none of them; returns the index with the lowest median.
int fastest_candidate(const TimingRule& rule, int candidates, int sets, const std::function<void(int)>& use,
                      const std::function<void(int)>& launch);

}  // namespace apnn
