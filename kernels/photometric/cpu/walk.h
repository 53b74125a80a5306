// photometric.cpp's walk over an image: its tasks (fixed runs of pixels), the runs of kRun pixels
// a step takes at once, read from the image's layout and written back converted, and the pixel
// loops' build for x86-64-v3. Included by photometric.cpp alone.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/Version.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/photometric/cpu/pixel_runs.h"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::cpu {
namespace {

using namespace gpuaug::photo;

// Fixed runs of pixels of one image, so that the partial sums do not depend on the number of
// threads.
constexpr int64_t kPixelsPerTask = 4096;
// Pixels a step takes at once: its branch once per run, its loop over them for the compiler to
// vectorise.
constexpr int kRun = 16;
#ifdef GPUAUG_PIXEL_RUNS
static_assert(kRun == pixel_runs::kPixels);

// Whether to take pixel_runs.h's AVX2 shuffles: where the CPU runs them (always where the pixel
// loops' x86-64-v3 clone runs) and PyTorch uses AVX2 or more (ATEN_CPU_CAPABILITY=default turns
// both off, and runs the portable loops).
bool use_pixel_runs() {
  static const bool use =
      __builtin_cpu_supports("x86-64-v3") && at::get_cpu_capability() != "DEFAULT";
  return use;
}

// The floating dtypes pixel_runs.h converts eight values at a time.
template <typename T>
constexpr bool kIsFloat32Or16 = std::is_same_v<T, float> || kIsHalfFloat<T>;
#endif

struct Walk {
  ImageGeometry g;
  int64_t tasks_per_image;
  int64_t channel_step, pixel_step;

  explicit Walk(const ImageGeometry& geometry)
      : g(geometry),
        tasks_per_image((geometry.pixels + kPixelsPerTask - 1) / kPixelsPerTask),
        channel_step(geometry.interleaved ? 1 : geometry.pixels),
        pixel_step(geometry.interleaved ? geometry.channels : 1) {}

  int64_t images() const { return g.samples * g.frames; }
  int64_t tasks() const { return images() * tasks_per_image; }
};

// Calls f(std::integral_constant<int, C>{}) for the image's channel count.
template <typename F>
void with_channels(const Walk& walk, F&& f) {
  if (walk.g.channels == 3) {
    f(std::integral_constant<int, 3>{});
  } else {
    f(std::integral_constant<int, 1>{});
  }
}

// Calls f(stride, at, n, channel) for pixels [first, last) of the image at `base` as spans of
// contiguous values: one of n interleaved pixels (stride C, channel 0 first), or one a plane
// (stride 1, its channel); `stride` is a std::integral_constant.
template <int C, typename F>
void for_each_span(const Walk& w, int64_t base, int64_t first, int64_t last, F&& f) {
  if (w.g.interleaved) {
    f(std::integral_constant<int, C>{}, base + first * C, last - first, 0);
    return;
  }
  for (int c = 0; c < C; ++c) {
    f(std::integral_constant<int, 1>{}, base + c * w.channel_step + first, last - first, c);
  }
}

// A float value as float16 or bfloat16, rounded to nearest even (half_floats.h's conversions).
template <typename out_t, typename P>
out_t narrowed(P v) {
  if constexpr (std::is_same_v<P, float> && std::is_same_v<out_t, c10::Half>) {
    return half_floats::to_half(v);
  } else if constexpr (std::is_same_v<P, float> && std::is_same_v<out_t, c10::BFloat16>) {
    return half_floats::to_bfloat16(v);
  } else {
    return static_cast<out_t>(v);
  }
}

// n float16 or bfloat16 values widened to the compute type, and back: loops of contiguous
// values, eight at a time with AVX2 (F16C for float16) where pixel_runs.h's functions run; GCC
// vectorises the portable loops, where the same conversions inside the run's loops stay scalar.
template <typename T, typename P>
void widen_values(const T* values, int n, P* out) {
#ifdef GPUAUG_PIXEL_RUNS
  if constexpr (kIsHalfFloat<T> && std::is_same_v<P, float>) {
    if (n % 8 == 0 && use_pixel_runs()) {
      pixel_runs::widen_values(values, n, out);
      return;
    }
  }
#endif
  for (int i = 0; i < n; ++i) out[i] = load<P>(values[i]);
}
template <typename P, typename out_t>
void narrow_values(const P* values, int n, out_t* out) {
#ifdef GPUAUG_PIXEL_RUNS
  if constexpr (kIsHalfFloat<out_t> && std::is_same_v<P, float>) {
    if (n % 8 == 0 && use_pixel_runs()) {
      pixel_runs::narrow_values(values, n, out);
      return;
    }
  }
#endif
  for (int i = 0; i < n; ++i) out[i] = narrowed<out_t>(values[i]);
}

template <int C, typename T, typename P>
void load_pixel(const T* in, int64_t at, const Walk& w, P (&x)[3]) {
  for (int c = 0; c < C; ++c) x[c] = load<P>(in[at + c * w.channel_step]);
}

// Pixels [first, first + count) of the image at `base`, count <= kRun; the rest of the run 0.
// A whole run reads contiguous values (a plane's, or interleaved pixels'), with the walk's steps
// in locals, so that the compiler vectorises it; with AVX2, a whole run of three uint8 channels
// or three float32, float16 or bfloat16 planes takes pixel_runs.h's shuffles (GCC 12 builds
// those a value at a time).
template <int C, typename T, typename P>
void load_run(const T* in, int64_t base, int64_t first, int count, const Walk& w,
              P (&x)[kRun][3]) {
  const int64_t pixel_step = w.pixel_step, channel_step = w.channel_step;
  const T* p = in + base + first * pixel_step;
#ifdef GPUAUG_PIXEL_RUNS
  if constexpr (C == 3 && std::is_same_v<P, float>) {
    if (count == kRun && use_pixel_runs()) {
      if constexpr (kIsU8<T>) {
        pixel_runs::load_u8(p, pixel_step == 1 ? channel_step : 0, &x[0][0]);
        return;
      } else if constexpr (kIsFloat32Or16<T>) {
        if (pixel_step == 1) {
          pixel_runs::load_planes(p, channel_step, &x[0][0]);
          return;
        }
      }
    }
  }
#endif
  if constexpr (kIsHalfFloat<T>) {
    if (count == kRun) {
      // widened a plane (or the run's interleaved values) at a time, as store_run narrows them
      P values[3][kRun];
      if (pixel_step == 1) {
        for (int c = 0; c < C; ++c) widen_values(p + c * channel_step, kRun, values[c]);
        for (int j = 0; j < kRun; ++j) {
          for (int c = 0; c < 3; ++c) x[j][c] = c < C ? values[c][j] : P(0);
        }
      } else {
        const P* pixels = &values[0][0];  // the run's kRun * C interleaved values
        widen_values(p, kRun * C, &values[0][0]);
        for (int j = 0; j < kRun; ++j) {
          for (int c = 0; c < 3; ++c) x[j][c] = c < C ? pixels[j * C + c] : P(0);
        }
      }
      return;
    }
  }
  if (count == kRun) {
    if (pixel_step == 1) {
      for (int c = 0; c < 3; ++c) {
        for (int j = 0; j < kRun; ++j) x[j][c] = c < C ? load<P>(p[c * channel_step + j]) : P(0);
      }
    } else {
      for (int j = 0; j < kRun; ++j) {
        for (int c = 0; c < 3; ++c) x[j][c] = c < C ? load<P>(p[j * C + c]) : P(0);
      }
    }
    return;
  }
  for (int j = 0; j < kRun; ++j) {
    for (int c = 0; c < 3; ++c) {
      x[j][c] = j < count && c < C ? load<P>(p[j * pixel_step + c * channel_step]) : P(0);
    }
  }
}

// The first `count` pixels of a run, converted, to pixels [first, first + count) of the image
// at `base`: as load_run reads them (a uint8 run's values are integers in [0, 255]).
template <int C, typename T, typename out_t, typename P>
void store_run(const P (&x)[kRun][3], int count, const Output<P>& o, const Walk& w,
               out_t* out, int64_t base, int64_t first) {
  const int64_t pixel_step = w.pixel_step, channel_step = w.channel_step;
  out_t* p = out + base + first * pixel_step;
#ifdef GPUAUG_PIXEL_RUNS
  if constexpr (C == 3 && std::is_same_v<P, float>) {
    if (count == kRun && use_pixel_runs()) {
      const int64_t plane_step = pixel_step == 1 ? channel_step : 0;
      if constexpr (kIsU8<T> && kIsU8<out_t>) {
        pixel_runs::store_u8(&x[0][0], p, plane_step);
        return;
      } else if constexpr (kIsU8<T> && std::is_same_v<out_t, float>) {
        if (plane_step) {
          pixel_runs::store_u8_planes(&x[0][0], p, plane_step, o.inv_std_u8, o.offset);
        } else {
          pixel_runs::store_interleaved(&x[0][0], p, o.inv_std_u8, o.offset);
        }
        return;
      } else if constexpr (kIsFloat32Or16<T> && kIsFloat32Or16<out_t>) {
        const float* scale = o.normalize ? o.inv_std : nullptr;
        if (plane_step) {
          pixel_runs::store_planes(&x[0][0], p, plane_step, scale, o.offset);
          return;
        }
        if constexpr (std::is_same_v<out_t, float>) {
          pixel_runs::store_interleaved(&x[0][0], p, scale, o.offset);
          return;
        }
      }
    }
  }
#endif
  if constexpr (kIsHalfFloat<out_t>) {
    if (count == kRun) {
      // converted as floats, then narrowed a plane (or the run's interleaved values) at a time
      if (pixel_step == 1) {
        for (int c = 0; c < C; ++c) {
          P plane[kRun];
          for (int j = 0; j < kRun; ++j) plane[j] = convert<T, P>(x[j][c], o, c);
          narrow_values(plane, kRun, p + c * channel_step);
        }
      } else {
        P pixels[kRun * C];
        for (int j = 0; j < kRun; ++j) {
          for (int c = 0; c < C; ++c) pixels[j * C + c] = convert<T, P>(x[j][c], o, c);
        }
        narrow_values(pixels, kRun * C, p);
      }
      return;
    }
  }
  if (count == kRun) {
    if (pixel_step == 1) {
      for (int c = 0; c < C; ++c) {
        for (int j = 0; j < kRun; ++j) p[c * channel_step + j] = convert<T, out_t>(x[j][c], o, c);
      }
    } else {
      for (int j = 0; j < kRun; ++j) {
        for (int c = 0; c < C; ++c) p[j * C + c] = convert<T, out_t>(x[j][c], o, c);
      }
    }
    return;
  }
  for (int j = 0; j < count; ++j) {
    for (int c = 0; c < C; ++c) {
      p[j * pixel_step + c * channel_step] = convert<T, out_t>(x[j][c], o, c);
    }
  }
}

// The pixel loops, built also for x86-64-v3 (AVX2, FMA) and picked at load time (GCC's
// target_clones, glibc's ifunc) on x86-64: the baseline has no FMA instruction, so torchvision's
// fused multiply-adds, which the stages reproduce, would be library calls there, one value at a
// time. Flattened, so that the stages they call are built for the same target. (CMakeLists.txt
// builds photometric.cpp without contracting multiplies and adds, and with selects that vectorise.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
#define GPUAUG_PIXEL_LOOP __attribute__((target_clones("arch=x86-64-v3", "default"), flatten))
#else
#define GPUAUG_PIXEL_LOOP
#endif

// Pixels [first, last) of the image at `base` through steps [0, end) of `prog`, a run at a time;
// each run's first `count` pixels then to sink(x, run_first, count).
template <int C, typename T, typename P, typename Sink>
inline void run_pixels(const T* in, const Walk& w, const SampleProgram<P>& prog, int end,
                       const Reduced<P>& r, int64_t base, int64_t first, int64_t last,
                       Sink&& sink) {
  for (int64_t px = first; px < last; px += kRun) {
    const int count = static_cast<int>(std::min<int64_t>(kRun, last - px));
    P x[kRun][3];
    load_run<C>(in, base, px, count, w, x);
    run_steps<C, T>(prog, 0, end, x, r);
    sink(x, px, count);
  }
}

// Calls f(image, prog, reduced, base, first, last) for every task's pixels [first, last),
// `base` the offset of the image, the tasks in parallel.
template <int C, typename P, typename F>
void for_each_task(const Walk& w, const std::vector<SampleProgram<P>>& progs,
                   const std::vector<Reduced<P>>& reduced, F&& f) {
  at::parallel_for(0, w.tasks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t image = task / w.tasks_per_image;
      const Reduced<P> r = reduced.empty() ? Reduced<P>{} : reduced[image];
      const int64_t first = (task % w.tasks_per_image) * kPixelsPerTask;
      const int64_t last = std::min(first + kPixelsPerTask, w.g.pixels);
      f(image, progs[image / w.g.frames], r, image * C * w.g.pixels, first, last);
    }
  });
}

}  // namespace
}  // namespace gpuaug::cpu
