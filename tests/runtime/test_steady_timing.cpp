// The timing rule shared by apnn bench, tune and verify (runtime/steady_timing.h): how many
// launches and repeats a kernel of a given length gets, when repeats are too spread to
// trust, and how many input sets keep the L2 cache out of the measurement.
#include <doctest/doctest.h>

#include "runtime/steady_timing.h"

using namespace apnn;

TEST_CASE("steady timing: plan, spread and rotation sets") {
  const TimingRule rule;  // 50 launches, 5 repeats, 100 ms per repeat at most
  Timing t = plan_timing(rule, 5);
  CHECK(t.launches == 50);
  CHECK(t.repeats == 5);
  t = plan_timing(rule, 5000);  // 5 ms: 20 launches fill 100 ms
  CHECK(t.launches == 20);
  CHECK(t.repeats == 5);
  t = plan_timing(rule, 25000);  // 25 ms: at least 3 launches, 3 repeats
  CHECK(t.launches == 4);
  CHECK(t.repeats == 3);
  t = plan_timing(rule, 1e6);
  CHECK(t.launches == 3);
  TimingRule few = rule;
  few.launches = 2;
  CHECK(plan_timing(few, 1e6).launches == 2);

  CHECK_FALSE(unsteady({10, 11, 11.9}));
  CHECK(unsteady({10, 11, 12.1}));
  CHECK_FALSE(unsteady({10}));

  const size_t l2 = 50u << 20;
  CHECK(rotation_sets(1u << 10, l2) == 32);       // tiny sets: capped
  CHECK(rotation_sets(48u << 20, l2) == 5);       // 4x the L2 in 48 MB sets
  CHECK(rotation_sets(size_t{1} << 30, l2) == 2); // larger than the L2: still two
}

