// A sample's program for gpuaug::photometric: each slot's step from its factor (given, or drawn
// from the sample's uniforms by the op's factor_ranges), the order the sample runs its slots in
// (a permutation, or keys ranked as torch.argsort(keys, stable=True)), and the decoded list of
// the steps it applies.
#pragma once

#include <c10/macros/Macros.h>

#include <cstdint>

#include "kernels/photometric/photometric.h"
#include "kernels/photometric/values.h"

namespace gpuaug::photo {

// A stage's step: its kind, its factor and what derives from the factor.
template <typename P>
C10_HOST_DEVICE inline Step<P> make_step(int kind, P factor) {
  Step<P> s{kind, factor, P(0), false, {}, {}};
  if (kind == kContrast || kind == kSaturation) {
    s.b = P(1.0 - static_cast<double>(factor));  // _blend's alpha, a Python float
    s.unit = s.a >= P(0) && s.a <= P(1) && s.b >= P(0);  // uint8 sums need no clamp (blend)
  } else if (kind == kBrightness) {
    s.b = u8_brightness_factor(factor);
    s.unit = s.b <= P(1);
  } else if (kind == kPosterize) {
    s.b = P(int64_t{1} << (static_cast<int>(factor) & 15));
  } else if (kind == kHue) {
    s.b = factor * P(6);  // uint8 hue's shift in sectors
  }
  return s;
}

C10_HOST_DEVICE inline bool is_reduction(int kind) {
  return kind == kContrast || kind == kAutocontrast || kind == kEqualize;
}

// Whether slot a runs before slot b by their keys: ascending, NaN last, ties (-0.0 and 0.0
// among them) by slot, the order of torch.argsort(keys, stable=True).
template <typename K>
C10_HOST_DEVICE inline bool key_before(K key_a, int a, K key_b, int b) {
  const bool nan_a = key_a != key_a, nan_b = key_b != key_b;
  if (nan_a != nan_b) return nan_b;
  if (!nan_a && key_a != key_b) return key_a < key_b;
  return a < b;
}

template <typename K>
C10_HOST_DEVICE inline int rank_in_row(const K* keys, int k, int s) {
  int rank = 0;
  for (int i = 0; i < k; ++i) rank += key_before(keys[i], i, keys[s], s);
  return rank;
}

// The position slot s takes in sample n's order when keys give it.
template <typename P>
C10_HOST_DEVICE inline int key_rank(const Rows<P>& rows, int64_t n, int k, int s) {
  return rows.float_keys ? rank_in_row(rows.float_keys[n], k, s)
                         : rank_in_row(rows.double_keys[n], k, s);
}

template <typename P>
C10_HOST_DEVICE inline bool has_keys(const Rows<P>& rows) {
  return rows.float_keys || rows.double_keys;
}

// `slot` where sample n runs it, else -1: outside 0..K-1 (an order that is not a permutation:
// the op's documented "skipped") or not applied.
template <typename P>
C10_HOST_DEVICE inline int64_t if_applied(const Rows<P>& rows, int64_t n, int k, int64_t slot) {
  if (slot < 0 || slot >= k) return -1;
  return rows.apply && !rows.apply[n][slot] ? -1 : slot;
}

// The slot sample n runs at position j of its order, or -1 where it runs none there.
template <typename P>
C10_HOST_DEVICE inline int64_t applied_slot(const Rows<P>& rows, int64_t n, int k, int j) {
  int64_t slot = j;
  if (rows.order) {
    slot = rows.order[n][j];
  } else if (has_keys(rows)) {
    for (int s = 0; s < k; ++s) {
      if (key_rank(rows, n, k, s) == j) slot = s;
    }
  }
  return if_applied(rows, n, k, slot);
}

// A drawn program's order key of `slot` for sample n's uniforms u.
template <typename P>
C10_HOST_DEVICE inline double drawn_key(const Program& program, const P* u, int slot) {
  const int column = program.key_column[slot];
  if (column < 0) return program.key_low[slot];
  return std::fma(program.key_width[slot], static_cast<double>(u[column]), program.key_low[slot]);
}

// Whether a drawn program's `slot` applies for sample n's uniforms u.
template <typename P>
C10_HOST_DEVICE inline bool drawn_applies(const Program& program, const P* u, int slot) {
  const int column = program.coin_column[slot];
  return column < 0 || static_cast<float>(u[column]) < static_cast<float>(program.coin_below[slot]);
}

// applied_slot of a drawn program.
template <typename P>
C10_HOST_DEVICE inline int64_t drawn_applied_slot(const Program& program, const Rows<P>& rows,
                                                  int64_t n, int k, int j) {
  const P* u = rows.factors[n];
  for (int s = 0; s < k; ++s) {
    const double key = drawn_key(program, u, s);
    int rank = 0;
    for (int i = 0; i < k; ++i) rank += key_before(drawn_key(program, u, i), i, key, s);
    if (rank == j) return drawn_applies(program, u, s) ? s : -1;
  }
  return -1;
}

// Out of line on the GPU: a sample's program decodes it once, and inlined into every kernel it
// would grow them all.
template <typename D>
GPUAUG_PHOTO_NOINLINE C10_HOST_DEVICE D gamma_of_log(D log_gamma) {
  return std::exp(log_gamma);
}

// A ranged program's factor of `slot` for the uniform u: u in the slot's range, rounded to
// float32 (a gamma slot's: exp of the value; a permutation's: ranged_permutation of the rounded
// value). The CPU check of the values calls it too.
C10_HOST_DEVICE inline float ranged_factor(const Program& program, int64_t slot, double u) {
  double factor = std::fma(program.width[slot], u, program.low[slot]);
  if (is_gamma_slot(program, slot)) factor = gamma_of_log(factor);
  if (program.kinds[slot] == kPermuteChannels) {
    return ranged_permutation(static_cast<float>(factor));
  }
  return static_cast<float>(factor);
}

// Sample n's factor of `slot`: its `factors` entry, or ranged_factor of that uniform.
template <typename P>
C10_HOST_DEVICE inline P slot_factor(const Program& program, const Rows<P>& rows, int64_t n,
                                     int64_t slot) {
  const P u = rows.factors[n][slot];
  if (!program.ranged) return u;
  return static_cast<P>(ranged_factor(program, slot, static_cast<double>(u)));
}

// A drawn program's factor of `slot`: ranged_factor of the uniform of its factor column (none: 0).
template <typename P>
C10_HOST_DEVICE inline P drawn_factor(const Program& program, const Rows<P>& rows, int64_t n,
                                      int64_t slot) {
  const int column = program.factor_column[slot];
  const P u = column < 0 ? P(0) : rows.factors[n][column];
  return static_cast<P>(ranged_factor(program, slot, static_cast<double>(u)));
}

// The step of `slot`, factor(i) the factor of slot i (a color_augment stage's parameters from its
// parameter slots).
template <typename P, typename Factor>
C10_HOST_DEVICE inline Step<P> step_of(const Program& program, int64_t slot,
                                       const Factor& factor) {
  Step<P> s = make_step(program.kinds[slot], factor(slot));
  if (s.kind == kColorAugment) {
    s.gains[0] = s.a;
    s.gains[1] = factor(slot + 1);
    s.gains[2] = factor(slot + 2);
    s.jitter = {factor(slot + 3), factor(slot + 4), factor(slot + 5)};
  }
  return s;
}

// Sample n's step of `slot`.
template <typename P>
C10_HOST_DEVICE inline Step<P> slot_step(const Program& program, const Rows<P>& rows, int64_t n,
                                         int64_t slot) {
  return step_of<P>(program, slot, [&](int64_t i) { return slot_factor(program, rows, n, i); });
}

// A drawn program's step of `slot` for sample n.
template <typename P>
C10_HOST_DEVICE inline Step<P> drawn_step(const Program& program, const Rows<P>& rows, int64_t n,
                                          int64_t slot) {
  return step_of<P>(program, slot, [&](int64_t i) { return drawn_factor(program, rows, n, i); });
}

// Whether `slot` (-1: none) runs a step: parameter slots only hold their stage's parameters.
C10_HOST_DEVICE inline bool has_step(const Program& program, int64_t slot) {
  return slot >= 0 && program.kinds[slot] != kColorParameter;
}

// Decodes sample n's program: its stages in its order, without those it does not apply.
template <typename P>
C10_HOST_DEVICE inline SampleProgram<P> decode(const Program& program, const Rows<P>& rows,
                                               int64_t n) {
  SampleProgram<P> prog;
  prog.count = 0;
  prog.reduce_at = -1;
  const int k = program.count;
  for (int j = 0; j < k; ++j) {
    const int64_t slot = program.drawn ? drawn_applied_slot(program, rows, n, k, j)
                                       : applied_slot(rows, n, k, j);
    if (!has_step(program, slot)) continue;
    const Step<P> s = program.drawn ? drawn_step(program, rows, n, slot)
                                    : slot_step(program, rows, n, slot);
    if (prog.reduce_at < 0 && is_reduction(s.kind)) prog.reduce_at = prog.count;
    prog.steps[prog.count++] = s;
  }
  return prog;
}

}  // namespace gpuaug::photo
