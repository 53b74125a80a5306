// One output pixel of gpuaug::augment's geometric front, forward (its value as the image dtype
// holds it) and adjoint (its gradient added to its source pixels'), for the CPU and CUDA loops.
#pragma once

#include <c10/macros/Macros.h>

#include <cstdint>

#include "kernels/augment/augment.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::geo {

// The resized image's pixel (ry, rx) that output pixel (y, x) shows, or false where the output
// lies outside the resized image (a crop larger than it: fill).
C10_HOST_DEVICE inline bool resized_coordinates(const SampleGeometry& g, const Settings& s,
                                                int64_t y, int64_t x, int64_t& ry, int64_t& rx) {
  ry = g.out_top + (g.out_vflip ? s.out_height - 1 - y : y);
  rx = g.out_left + (g.out_hflip ? s.out_width - 1 - x : x);
  // (a window of no pixels, which the op rejects where it can see the geometry: fill)
  return ry >= 0 && ry < g.resized_height && rx >= 0 && rx < g.resized_width && g.height > 0 &&
         g.width > 0;
}

// Axis of resized coordinate i: one tap of weight 1 where the window keeps its size there.
C10_HOST_DEVICE inline Axis axis_at(int64_t i, int64_t in, int64_t out, const Settings& s) {
  if (in != out) return resize_axis(i, in, out, s.interpolation, s.antialias);
  Axis a{};
  a.first = i;
  a.count = 1;
  a.extent = in;
  a.w[0] = 1.0f;
  return a;
}

// The image rows (or columns) of an axis's taps: -1 where constant padding gives the pixel.
struct Taps {
  int64_t index[kCachedTaps];
  float weight[kCachedTaps];
};

C10_HOST_DEVICE inline int64_t tap_index(const Axis& a, int j, int64_t start, bool flip,
                                         int64_t size, int mode) {
  return source_index(a.coordinate(j), start, a.extent, flip, size, mode);
}

C10_HOST_DEVICE inline void cache_taps(const Axis& a, int64_t start, bool flip, int64_t size,
                                       int mode, Taps& t) {
  GPUAUG_UNROLL
  for (int j = 0; j < kCachedTaps; ++j) {
    if (j < a.count) {
      t.index[j] = tap_index(a, j, start, flip, size, mode);
      t.weight[j] = a.weight(j);
    }
  }
}

// The fill as the image's dtype T holds it (uint8: truncated, as torch's pad converts its value,
// and clamped to 0..255).
template <typename T, typename P>
inline void fill_values(const Settings& s, P (&fill)[3]) {
  for (int c = 0; c < 3; ++c) {
    double v = s.fill[c];
    if constexpr (std::is_same_v<T, uint8_t>) v = std::trunc(v < 0 ? 0 : (v > 255 ? 255 : v));
    fill[c] = photo::load<P>(static_cast<T>(v));
  }
}

// What the pixels of output row y share: its row of the resized image (outside it: fill) and
// that row's vertical taps, the first kCachedTaps of them as image rows (-1: fill) and weights.
struct RowTaps {
  bool inside;
  Axis axis;
  Taps taps;
};

C10_HOST_DEVICE inline RowTaps row_taps(const Source& src, const SampleGeometry& g,
                                        const Settings& s, int64_t y) {
  RowTaps r{};
  const int64_t ry = g.out_top + (g.out_vflip ? s.out_height - 1 - y : y);
  // (a window of no pixels, which the op rejects where it can see the geometry: fill)
  r.inside = ry >= 0 && ry < g.resized_height && g.height > 0 && g.width > 0;
  if (!r.inside) return r;
  r.axis = axis_at(ry, g.height, g.resized_height, s);
  cache_taps(r.axis, g.top, g.window_vflip, src.height, s.padding_mode, r.taps);
  return r;
}

// Output pixel (row's y, x) of a sample whose image (its first element at `image`) is `src`'s,
// in the compute type P, as its dtype T holds it: v[c] for C channels. `fill`: the fill as T
// holds it.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline void geometric_pixel(const T* image, const Source& src,
                                            const SampleGeometry& g, const Settings& s,
                                            const P (&fill)[3], const RowTaps& row, int64_t x,
                                            P (&v)[3]) {
  const int64_t rx = g.out_left + (g.out_hflip ? s.out_width - 1 - x : x);
  if (!row.inside || rx < 0 || rx >= g.resized_width) {
    GPUAUG_UNROLL
    for (int c = 0; c < C; ++c) v[c] = fill[c];
    return;
  }
  const Axis& ay = row.axis;
  const Axis ax = axis_at(rx, g.width, g.resized_width, s);
  Taps cols;
  cache_taps(ax, g.left, g.window_hflip, src.width, s.padding_mode, cols);
  P acc[C];  // float, as torch resizes uint8 and half types (float64 images: float64)
  GPUAUG_UNROLL
  for (int c = 0; c < C; ++c) acc[c] = P(0);
  for (int ty = 0; ty < ay.count; ++ty) {
    const bool row_cached = ty < kCachedTaps;
    const int64_t iy = row_cached ? row.taps.index[ty]
                                  : tap_index(ay, ty, g.top, g.window_vflip, src.height,
                                              s.padding_mode);
    const T* image_row = image + iy * src.row_stride;
    P sum[C];
    GPUAUG_UNROLL
    for (int c = 0; c < C; ++c) sum[c] = P(0);
    for (int tx = 0; tx < ax.count; ++tx) {
      const bool cached = tx < kCachedTaps;
      const int64_t ix = cached ? cols.index[tx]
                                : tap_index(ax, tx, g.left, g.window_hflip, src.width,
                                            s.padding_mode);
      const P wx = cached ? cols.weight[tx] : ax.weight(tx);
      GPUAUG_UNROLL
      for (int c = 0; c < C; ++c) {
        const P value =
            iy < 0 || ix < 0
                ? fill[c]
                : photo::load<P>(image_row[c * src.channel_stride + ix * src.column_stride]);
        sum[c] += value * wx;
      }
    }
    const P wy = row_cached ? row.taps.weight[ty] : ay.weight(ty);
    GPUAUG_UNROLL
    for (int c = 0; c < C; ++c) acc[c] += (s.uint8_passes ? held_as<T, P>(sum[c]) : sum[c]) * wy;
  }
  GPUAUG_UNROLL
  for (int c = 0; c < C; ++c) v[c] = held_as<T, P>(acc[c]);
}

// Adds output pixel (y, x)'s gradient g_out[c] (times each tap's weight) into `grad`, the
// sample's image gradient (Source's strides; Add(pointer, value) adds one value).
template <typename G, typename Add>
C10_HOST_DEVICE inline void geometric_adjoint(G* grad, const Source& src, const SampleGeometry& g,
                                              const Settings& s, int channels, int64_t y,
                                              int64_t x, const G* g_out, const Add& add) {
  int64_t ry, rx;
  if (!resized_coordinates(g, s, y, x, ry, rx)) return;
  const Axis ay = axis_at(ry, g.height, g.resized_height, s);
  const Axis ax = axis_at(rx, g.width, g.resized_width, s);
  for (int ty = 0; ty < ay.count; ++ty) {
    const int64_t iy = tap_index(ay, ty, g.top, g.window_vflip, src.height, s.padding_mode);
    if (iy < 0) continue;
    const G wy = ay.weight(ty);
    for (int tx = 0; tx < ax.count; ++tx) {
      const int64_t ix = tap_index(ax, tx, g.left, g.window_hflip, src.width, s.padding_mode);
      if (ix < 0) continue;
      const G w = wy * static_cast<G>(ax.weight(tx));
      for (int c = 0; c < channels; ++c) {
        add(grad + c * src.channel_stride + iy * src.row_stride + ix * src.column_stride,
            g_out[c] * w);
      }
    }
  }
}

}  // namespace gpuaug::geo
