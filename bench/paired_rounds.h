// What the paired benchmarks share: each round times a row with its
// baselines back to back, and the figures they report are medians over
// rounds of ratios taken within a round. On this kind of shared VM a
// benchmark's speed swings by 1.5-3x within seconds (bench/RESULTS.md);
// two passes of the same round see the same phase, two benchmarks run
// seconds apart do not.
#ifndef HURRAY_BENCH_PAIRED_ROUNDS_H_
#define HURRAY_BENCH_PAIRED_ROUNDS_H_

#include <algorithm>
#include <vector>

namespace hurray::bench {

// The middle value (the upper one of an even count); 0 when empty.
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Orders of the passes of a paired round, cycled from round to round, in
// which every pass follows every other equally often: all six orders of
// three, and a Williams square of four (each ordered pair adjacent once).
// What one pass leaves behind (the write queue of non-temporal stores, the
// clock, the other vCPU) then weighs on every pass alike.
inline constexpr int kOrdersOf3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                         {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
inline constexpr int kOrdersOf4[4][4] = {
    {0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}};

}  // namespace hurray::bench

#endif  // HURRAY_BENCH_PAIRED_ROUNDS_H_
