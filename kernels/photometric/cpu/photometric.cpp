// gpuaug::photometric's CPU loops. Forward: a reduction pass for the statistics of the program's
// reduction stage (contrast's grayscale mean, autocontrast's channel minima and maxima,
// equalize's histograms), then one pass that runs each pixel through its sample's program.
// Backward: with contrast, the mean again and a reduction pass for its gradient (each pixel's
// gradient back to the contrast step); then one pass back through every step.
// Its parts: walk.h (tasks, runs of pixels in and out), u8.h (uint8
// shortcuts: tables, byte operations), pixel_runs.h (AVX2 runs).
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/photometric/cpu/u8.h"
#include "kernels/photometric/cpu/walk.h"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/grad.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::cpu {
namespace {

using namespace gpuaug::photo;

template <typename P>
std::vector<SampleProgram<P>> decode_all(const Program& program, const Walk& walk,
                                         const at::Tensor& factors, const at::Tensor& order,
                                         const at::Tensor& apply) {
  const Rows<P> rows = photometric_rows<P>(factors, order, apply);
  std::vector<SampleProgram<P>> progs(walk.g.samples);
  for (int64_t n = 0; n < walk.g.samples; ++n) progs[n] = decode(program, rows, n);
  return progs;
}

struct Stats {
  double v[kStats];
};

// Per image, the statistics of a reduction of `kind` (stages.h) to which
// f(image, first, last, stats) adds a run of pixels: each run from the initial statistics, the
// runs combined in a fixed order.
template <typename F>
std::vector<Stats> image_stats(const Walk& w, int kind, F&& f) {
  Stats initial;
  for (int i = 0; i < kStats; ++i) initial.v[i] = initial_stat(kind, i);
  std::vector<Stats> partial(w.tasks(), initial);
  at::parallel_for(0, w.tasks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t first = (task % w.tasks_per_image) * kPixelsPerTask;
      const int64_t last = std::min(first + kPixelsPerTask, w.g.pixels);
      f(task / w.tasks_per_image, first, last, partial[task].v);
    }
  });
  std::vector<Stats> stats(w.images(), initial);
  for (int64_t image = 0; image < w.images(); ++image) {
    for (int64_t t = 0; t < w.tasks_per_image; ++t) {
      for (int i = 0; i < kStats; ++i) {
        const double part = partial[image * w.tasks_per_image + t].v[i];
        stats[image].v[i] = combine_stat(kind, i, stats[image].v[i], part);
      }
    }
  }
  return stats;
}

// Adds the statistics of pixels [first, last) at their reduction step to `sums`, pixel by pixel
// (the steps before it read no statistics).
template <int C, typename T, typename P>
GPUAUG_PIXEL_LOOP void add_stats(const T* in, const Walk& w, const SampleProgram<P>& prog,
                                 int kind, int64_t base, int64_t first, int64_t last,
                                 double (&sums)[kStats]) {
  run_pixels<C, T>(in, w, prog, prog.reduce_at, Reduced<P>{}, base, first, last,
                   [&](const P (&x)[kRun][3], int64_t, int count) {
                     if (kind == kContrast) {
                       // the grays in a loop of their own, which GCC vectorises, then their sum
                       // in order (float16's grays, rounded thrice, are costly)
                       P grays[kRun];
                       for (int j = 0; j < kRun; ++j) grays[j] = contrast_gray<C, T>(x[j]);
                       for (int j = 0; j < count; ++j) sums[0] += grays[j];
                       return;
                     }
                     for (int j = 0; j < count; ++j) add_pixel_stats<C, T>(kind, x[j], sums);
                   });
}

// The channels' smallest and largest of n pixels at p, Stride apart (1: a plane; C: interleaved,
// p at a pixel's first channel), added to `stats`: lanes of a block of values, then the channels
// of the lanes, so that the compiler vectorises the loop. A NaN wins, as in torch.amin and amax.
template <int Stride, typename T>
GPUAUG_PIXEL_LOOP void add_run_extremes(const T* __restrict p, int64_t n, int channel,
                                        double (&stats)[kStats]) {
  constexpr int kBlock = 32 * Stride;
  const T top = kIsU8<T> ? T(255) : std::numeric_limits<T>::infinity();
  T low[kBlock], high[kBlock];
  uint8_t has_nan[kBlock];
  std::fill_n(low, kBlock, top);
  std::fill_n(high, kBlock, kIsU8<T> ? T(0) : -top);
  std::fill_n(has_nan, kBlock, uint8_t{0});
  // selects on a copy (std::min's references do not vectorise), whole blocks, then the rest
  auto add = [&](int j, T v) {
    low[j] = v < low[j] ? v : low[j];
    high[j] = v > high[j] ? v : high[j];
    has_nan[j] |= v != v;
  };
  const int64_t values = n * Stride, blocked = values / kBlock * kBlock;
  for (int64_t k = 0; k < blocked; k += kBlock) {
    for (int j = 0; j < kBlock; ++j) add(j, p[k + j]);
  }
  for (int64_t k = blocked; k < values; ++k) add(static_cast<int>(k - blocked), p[k]);
  for (int j = 0; j < kBlock; ++j) {
    const int c = channel + j % Stride;
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    stats[c] = combine_stat(kAutocontrast, c, stats[c], has_nan[j] ? kNaN : low[j]);
    stats[3 + c] = combine_stat(kAutocontrast, 3 + c, stats[3 + c], has_nan[j] ? kNaN : high[j]);
  }
}

// add_run_extremes of float16 or bfloat16 values, widened to float a block at a time (their
// extremes are the widened values'): pixel by pixel, RandomAutocontrast of float16 images was
// slower than torchvision's.
template <int Stride, typename T>
void add_widened_extremes(const T* p, int64_t n, int channel, double (&stats)[kStats]) {
  constexpr int64_t kBlockPixels = 512;
  float widened[kBlockPixels * Stride];
  for (int64_t first = 0; first < n; first += kBlockPixels) {
    const int64_t pixels = std::min(kBlockPixels, n - first);
    widen_values(p + first * Stride, static_cast<int>(pixels * Stride), widened);
    add_run_extremes<Stride>(widened, pixels, channel, stats);
  }
}

// Adds n pixels' values at p, Stride channels interleaved (1: a plane), to the histograms of
// channels [channel, channel + Stride): in two halves, each its own counts, so that a value
// repeated does not wait on its own count's last increment.
template <int Stride>
void count_bytes(const uint8_t* p, int64_t n, int64_t (&histogram)[3][kBins], int channel) {
  int64_t halves[2][Stride][kBins] = {};
  const int64_t paired = n / 2 * 2;
  for (int64_t px = 0; px < paired; px += 2) {
    for (int c = 0; c < Stride; ++c) {
      ++halves[0][c][p[px * Stride + c]];
      ++halves[1][c][p[(px + 1) * Stride + c]];
    }
  }
  for (int c = 0; c < Stride; ++c) {
    if (paired < n) ++halves[0][c][p[paired * Stride + c]];
    for (int k = 0; k < kBins; ++k) histogram[channel + c][k] += halves[0][c][k] + halves[1][c][k];
  }
}

// Counts the image's values at its equalize step.
template <int C, typename T, typename P>
GPUAUG_PIXEL_LOOP void count_values(const T* in, const Walk& w, const SampleProgram<P>& prog,
                                    int64_t base, int64_t (&histogram)[3][kBins]) {
  if constexpr (kIsU8<T>) {
    if (prog.reduce_at == 0) {  // the values as they are
      for_each_span<C>(w, base, 0, w.g.pixels, [&](auto stride, int64_t at, int64_t n, int c) {
        count_bytes<decltype(stride)::value>(in + at, n, histogram, c);
      });
      return;
    }
  }
  run_pixels<C, T>(in, w, prog, prog.reduce_at, Reduced<P>{}, base, 0, w.g.pixels,
                   [&](const P (&x)[kRun][3], int64_t, int count) {
                     // the bins in a loop of their own, which GCC vectorises (float16's scaling
                     // beside the counts stayed scalar, slower than torchvision)
                     int bins[kRun][3];
                     for (int j = 0; j < kRun; ++j) {
                       for (int c = 0; c < C; ++c) bins[j][c] = equalize_bin<T>(x[j][c]);
                     }
                     for (int j = 0; j < count; ++j) {
                       for (int c = 0; c < C; ++c) ++histogram[c][bins[j][c]];
                     }
                   });
}

// Pixels [first, last) of the image at `base` through the whole program, converted into `out`.
template <int C, typename T, typename out_t, typename P>
GPUAUG_PIXEL_LOOP void transform_pixels(const T* in, out_t* out, const Walk& w,
                                        const SampleProgram<P>& prog, const Reduced<P>& r,
                                        const Output<P>& o, int64_t base, int64_t first,
                                        int64_t last) {
  run_pixels<C, T>(in, w, prog, prog.count, r, base, first, last,
                   [&](const P (&x)[kRun][3], int64_t run_first, int count) {
                     store_run<C, T>(x, count, o, w, out, base, run_first);
                   });
}

// Each image's equalize tables (3 x kBins), from its channels' histograms at its sample's
// equalize step. An image's pixels are counted in one task: integer counts, any order.
template <int C, typename T, typename P>
std::vector<uint8_t> equalize_tables(const T* in, const Walk& w,
                                     const std::vector<SampleProgram<P>>& progs) {
  std::vector<uint8_t> tables(w.images() * 3 * kBins);
  at::parallel_for(0, w.images(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t image = begin; image < end; ++image) {
      const SampleProgram<P>& prog = progs[image / w.g.frames];
      if (prog.reduce_at < 0) continue;
      int64_t histogram[3][kBins] = {};
      count_values<C, T>(in, w, prog, image * C * w.g.pixels, histogram);
      for (int c = 0; c < C; ++c) equalize_table(histogram[c], &tables[(image * 3 + c) * kBins]);
    }
  });
  return tables;
}

// Each image's statistics at its sample's reduction step (none where it has none); equalize's
// tables live in `tables`.
template <int C, typename T, typename P>
std::vector<Reduced<P>> reductions(const T* in, const Walk& w, int kind,
                                   const std::vector<SampleProgram<P>>& progs,
                                   std::vector<uint8_t>& tables) {
  std::vector<Reduced<P>> reduced(w.images());
  if (kind == kEqualize) {
    tables = equalize_tables<C, T>(in, w, progs);
    for (int64_t image = 0; image < w.images(); ++image) {
      reduced[image].table = &tables[image * 3 * kBins];
    }
    return reduced;
  }
  const std::vector<Stats> stats = image_stats(
      w, kind, [&](int64_t image, int64_t first, int64_t last, double (&sums)[kStats]) {
        const SampleProgram<P>& prog = progs[image / w.g.frames];
        const int64_t base = image * C * w.g.pixels;
        // values as they are in a type the loop vectorises, float16 and bfloat16 widened first
        if (prog.reduce_at == 0 && kind == kAutocontrast) {
          for_each_span<C>(w, base, first, last, [&](auto stride, int64_t at, int64_t n, int c) {
            constexpr int kStride = decltype(stride)::value;
            if constexpr (kIsHalfFloat<T>) {
              add_widened_extremes<kStride>(in + at, n, c, sums);
            } else {
              add_run_extremes<kStride>(in + at, n, c, sums);
            }
          });
          return;
        }
        if (prog.reduce_at >= 0) add_stats<C, T>(in, w, prog, kind, base, first, last, sums);
      });
  for (int64_t image = 0; image < w.images(); ++image) {
    reduced[image] = finish_reduction<T, P>(kind, stats[image].v, w.g.pixels);
  }
  return reduced;
}

// Whether a step of `kind` does the same to every value of an image, whatever its channel.
inline bool same_for_every_channel(int kind) {
  return kind == kBrightness || kind == kContrast || kind == kSolarize || kind == kPosterize ||
         kind == kInvert;
}

// Whether every step of the program passes `test` (of its kind).
template <typename P, typename Test>
bool every_step(const SampleProgram<P>& prog, Test&& test) {
  return std::all_of(prog.steps, prog.steps + prog.count,
                     [&](const Step<P>& s) { return test(s.kind); });
}

// Whether each step of the program maps every channel's value apart from the others': then, for
// a uint8 image, the program and the conversion are a table of kBins values a channel.
template <typename P>
bool maps_channels_apart(const SampleProgram<P>& prog) {
  return every_step(prog, [](int kind) {
    return same_for_every_channel(kind) || kind == kAutocontrast || kind == kEqualize;
  });
}

// A program of steps that do the same to every channel's values, and channel permutations, which
// then commute with those steps: `source[c]`, the input channel output channel c takes, and
// `rest`, the program without its permutations.
template <typename P>
void split_permutations(const SampleProgram<P>& prog, int (&source)[3], SampleProgram<P>& rest) {
  for (int c = 0; c < 3; ++c) source[c] = c;
  rest.count = 0;
  rest.reduce_at = -1;
  for (int i = 0; i < prog.count; ++i) {
    const Step<P>& s = prog.steps[i];
    if (s.kind == kPermuteChannels) {
      const int code = static_cast<int>(s.a);
      const int before[3] = {source[0], source[1], source[2]};
      for (int c = 0; c < 3; ++c) source[c] = before[permuted_channel(code, c)];
    } else {
      if (i == prog.reduce_at) rest.reduce_at = rest.count;
      rest.steps[rest.count++] = s;
    }
  }
}

// An image's statistics with channel c's in every channel's place (its equalize table copied
// into `table`), for a plane of channel c's values taken as pixels of three values.
template <typename P>
Reduced<P> channel_reduced(const Reduced<P>& r, int c, uint8_t (&table)[3 * kBins]) {
  Reduced<P> plane = r;
  for (int k = 0; k < 3; ++k) {
    plane.low[k] = r.low[c];
    plane.inv_scale[k] = r.inv_scale[c];
    if (r.table != nullptr) std::copy_n(r.table + c * kBins, kBins, table + k * kBins);
  }
  if (r.table != nullptr) plane.table = table;
  return plane;
}

// The output's conversion with channel c's in every channel's place.
template <typename P>
Output<P> channel_output(const Output<P>& o, int c) {
  Output<P> plane = o;
  for (int k = 0; k < 3; ++k) {
    plane.inv_std[k] = o.inv_std[c];
    plane.inv_std_u8[k] = o.inv_std_u8[c];
    plane.offset[k] = o.offset[c];
    plane.mean_f64[k] = o.mean_f64[c];
    plane.std_f64[k] = o.std_f64[c];
  }
  return plane;
}

// Whether the output's conversion does the same to each of the image's C channels.
template <int C, typename P>
bool converts_channels_alike(const Output<P>& o) {
  for (int c = 1; o.normalize && c < C; ++c) {
    if (o.inv_std[c] != o.inv_std[0] || o.offset[c] != o.offset[0]) return false;
  }
  return true;
}

// Values [0, n) of `in` through the program and the conversion, which treat every channel alike,
// into `out`: kRun pixels of three channels at a time, whatever the image's layout, so that each
// whole run is a contiguous copy (three planes' values gathered into pixels are not).
template <typename T, typename out_t, typename P>
GPUAUG_PIXEL_LOOP void transform_values(const T* in, out_t* out, int64_t n,
                                        const SampleProgram<P>& prog, const Reduced<P>& r,
                                        const Output<P>& o) {
  constexpr int kValues = kRun * 3;
  const Output<P> conversion = o;  // a copy the stores cannot alias
  for (int64_t k = 0; k < n; k += kValues) {
    const int count = static_cast<int>(std::min<int64_t>(kValues, n - k));
    P x[kRun][3];
    P* values = &x[0][0];
    if (kIsHalfFloat<T> && count == kValues) {  // in one loop (F16C), as load_run widens them
      widen_values(in + k, kValues, values);
    } else if (count == kValues) {
      for (int j = 0; j < kRun; ++j) {
        for (int c = 0; c < 3; ++c) x[j][c] = load<P>(in[k + j * 3 + c]);
      }
    } else {
      for (int i = 0; i < kValues; ++i) values[i] = i < count ? load<P>(in[k + i]) : P(0);
    }
    run_steps<3, T>(prog, 0, prog.count, x, r);
    if constexpr (kIsHalfFloat<out_t>) {  // as store_run narrows them
      P converted[kValues];
      for (int i = 0; i < kValues; ++i) converted[i] = convert<T, P>(values[i], conversion, 0);
      narrow_values(converted, count, out + k);
    } else if (count == kValues) {
      for (int j = 0; j < kRun; ++j) {
        for (int c = 0; c < 3; ++c) out[k + j * 3 + c] = convert<T, out_t>(x[j][c], conversion, 0);
      }
    } else {
      for (int i = 0; i < count; ++i) out[k + i] = convert<T, out_t>(values[i], conversion, 0);
    }
  }
}

template <int C, typename T, typename out_t, typename P>
void transform(const T* in, out_t* out, const Walk& w, const std::vector<SampleProgram<P>>& progs,
               const std::vector<Reduced<P>>& reduced, const Output<P>& o) {
  // uint8 to uint8 programs of bitwise steps run as byte loops (far faster than through a
  // table)
  if constexpr (kIsU8<T> && kIsU8<out_t>) {
    if (all_byte_ops(progs)) {
      for_each_task<C>(w, progs, reduced, [&](int64_t, const SampleProgram<P>& prog,
                                              const Reduced<P>&, int64_t base, int64_t first,
                                              int64_t last) {
        ByteOp ops[kMaxStages];
        int count = 0;
        byte_ops(prog, ops, count);
        // the same operations for every channel: the image's bytes, whatever their layout
        map_bytes(in + base + first * C, out + base + first * C, (last - first) * C, ops, count);
      });
      return;
    }
  }
  // other uint8 images whose programs map channels apart look their pixels up in tables of their
  // values (a load a value instead of the steps' arithmetic); an empty vector: none do
  std::vector<out_t> tables;
  if constexpr (kIsU8<T>) {
    const bool every_image = std::all_of(progs.begin(), progs.end(),
                                         [](const auto& prog) { return maps_channels_apart(prog); });
    if (every_image) {
      tables.resize(w.images() * C * kBins);
      at::parallel_for(0, w.images(), 1, [&](int64_t begin, int64_t end) {
        for (int64_t image = begin; image < end; ++image) {
          const Reduced<P> r = reduced.empty() ? Reduced<P>{} : reduced[image];
          make_tables<C, T>(progs[image / w.g.frames], r, o, &tables[image * C * kBins]);
        }
      });
    }
  }
  // floating images' programs of steps that treat every channel alike take their values in
  // spans, whatever the layout (faster than pixel by pixel)
  const bool alike_conversion = converts_channels_alike<C>(o);
  for_each_task<C>(w, progs, reduced, [&](int64_t image, const SampleProgram<P>& prog,
                                          const Reduced<P>& r, int64_t base, int64_t first,
                                          int64_t last) {
    if constexpr (kIsU8<T>) {
      if (!tables.empty()) {
        for_each_span<C>(w, base, first, last, [&](auto stride, int64_t at, int64_t n, int c) {
          constexpr int kStride = decltype(stride)::value;
          look_up<kStride>(in + at, out + at, n * kStride, &tables[(image * C + c) * kBins]);
        });
        return;
      }
    }
    if constexpr (!kIsU8<T>) {
      // planar images' programs of steps that map each channel apart take each plane's values
      // as spans too, with the plane's statistics and conversion in every slot (faster than
      // pixel by pixel)
      if (!w.g.interleaved && !every_step(prog, same_for_every_channel) &&
          maps_channels_apart(prog)) {
        for_each_span<C>(w, base, first, last, [&](auto, int64_t at, int64_t n, int c) {
          uint8_t table[3 * kBins];
          const Reduced<P> plane_r = channel_reduced(r, c, table);
          const Output<P> plane_o = channel_output(o, c);
          transform_values<T>(in + at, out + at, n, prog, plane_r, plane_o);
        });
        return;
      }
      if (alike_conversion && every_step(prog, same_for_every_channel)) {
        for_each_span<C>(w, base, first, last, [&](auto stride, int64_t at, int64_t n, int) {
          transform_values<T>(in + at, out + at, n * decltype(stride)::value, prog, r, o);
        });
        return;
      }
      // planar images' programs of such steps and channel permutations take each output plane's
      // values from its input plane (pixel by pixel, slower than torchvision's)
      if (C == 3 && alike_conversion && !w.g.interleaved &&
          every_step(prog, [](int kind) {
            return same_for_every_channel(kind) || kind == kPermuteChannels;
          })) {
        int source[3];
        SampleProgram<P> rest;
        split_permutations(prog, source, rest);
        for_each_span<C>(w, base, first, last, [&](auto, int64_t at, int64_t n, int c) {
          transform_values<T>(in + at + (source[c] - c) * w.channel_step, out + at, n, rest, r, o);
        });
        return;
      }
    }
    transform_pixels<C, T>(in, out, w, prog, r, o, base, first, last);
  });
}

void photometric(const at::Tensor& out, const at::Tensor& image, const Program& program,
                 const at::Tensor& factors, const at::Tensor& order, const at::Tensor& apply,
                 std::optional<c10::ArrayRef<double>> mean,
                 std::optional<c10::ArrayRef<double>> stddev) {
  const at::Tensor in = dense_image(image);
  const Walk walk(image_geometry(in));
  photometric_dispatch(in.scalar_type(), out.scalar_type(), [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using out_t = typename decltype(out_tag)::type;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<SampleProgram<P>> progs = decode_all<P>(program, walk, factors, order, apply);
    const Output<P> o = photometric_output<P>(mean, stddev);
    with_channels(walk, [&](auto channels) {
      constexpr int C = decltype(channels)::value;
      const T* src = in.const_data_ptr<T>();
      std::vector<uint8_t> tables;
      const std::vector<Reduced<P>> reduced =
          program.reduction ? reductions<C, T>(src, walk, program.reduction, progs, tables)
                            : std::vector<Reduced<P>>{};
      transform<C, T>(src, out.mutable_data_ptr<out_t>(), walk, progs, reduced, o);
    });
  });
}

// The gradient of pixels [first, last) of the image at `base` back through steps
// [stop, prog.count): with stop the reduction step, only each pixel's gradient of the mean,
// summed into `mean_grad_sum`; with stop 0 the image's gradient, into `grad_in`.
template <int C, typename T, typename P>
GPUAUG_PIXEL_LOOP void backprop_pixels(const T* grad, const T* in, T* grad_in, const Walk& w,
                                       const SampleProgram<P>& prog, const Reduced<P>& r,
                                       const Output<P>& scale, int stop, P mean_grad_per_pixel,
                                       int64_t base, int64_t first, int64_t last,
                                       double* mean_grad_sum) {
  for (int64_t px = first; px < last; ++px) {
    const int64_t at = base + px * w.pixel_step;
    P x[3], g[3], mean_grad = 0;
    load_pixel<C>(in, at, w, x);
    load_pixel<C>(grad, at, w, g);
    for (int c = 0; c < C; ++c) g[c] *= scale.inv_std[c];
    backprop_pixel<C, T>(prog, x, r, stop, mean_grad_per_pixel, g, &mean_grad);
    if (mean_grad_sum != nullptr) {
      *mean_grad_sum += mean_grad;
    } else {
      for (int c = 0; c < C; ++c) grad_in[at + c * w.channel_step] = static_cast<T>(g[c]);
    }
  }
}

template <int C, typename T, typename P>
void backward(const T* grad, const T* in, T* grad_in, const Walk& w,
              const std::vector<SampleProgram<P>>& progs,
              const std::vector<Reduced<P>>& reduced, const Output<P>& scale) {
  // Each image's mean gradient per pixel (its total over the image / the pixel count).
  std::vector<P> mean_grads(w.images(), P(0));
  if (!reduced.empty()) {
    const std::vector<Stats> sums = image_stats(
        w, kContrast, [&](int64_t image, int64_t first, int64_t last, double (&sum)[kStats]) {
          const SampleProgram<P>& prog = progs[image / w.g.frames];
          if (prog.reduce_at < 0) return;
          backprop_pixels<C>(grad, in, static_cast<T*>(nullptr), w, prog, reduced[image], scale,
                             prog.reduce_at, P(0), image * C * w.g.pixels, first, last, &sum[0]);
        });
    for (int64_t image = 0; image < w.images(); ++image) {
      mean_grads[image] = static_cast<P>(sums[image].v[0] / static_cast<double>(w.g.pixels));
    }
  }
  for_each_task<C>(w, progs, reduced, [&](int64_t image, const SampleProgram<P>& prog,
                                          const Reduced<P>& r, int64_t base, int64_t first,
                                          int64_t last) {
    backprop_pixels<C>(grad, in, grad_in, w, prog, r, scale, 0, mean_grads[image], base, first,
                       last, nullptr);
  });
}

void photometric_backward(const at::Tensor& grad_image, const at::Tensor& grad,
                          const at::Tensor& image, const Program& program,
                          const at::Tensor& factors, const at::Tensor& order,
                          const at::Tensor& apply, std::optional<c10::ArrayRef<double>> stddev) {
  const at::Tensor in = dense_image(image);
  const at::Tensor grad_out = grad_in_image_layout(grad, grad_image);
  const Walk walk(image_geometry(in));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(),
                                  "gpuaug::_photometric_backward", [&] {
    using T = scalar_t;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<SampleProgram<P>> progs = decode_all<P>(program, walk, factors, order, apply);
    with_channels(walk, [&](auto channels) {
      constexpr int C = decltype(channels)::value;
      const T* src = in.const_data_ptr<T>();
      // the op refuses autocontrast and equalize: contrast is the one reduction here
      std::vector<uint8_t> no_tables;
      const std::vector<Reduced<P>> reduced =
          program.reduction ? reductions<C, T>(src, walk, program.reduction, progs, no_tables)
                            : std::vector<Reduced<P>>{};
      backward<C, T>(grad_out.const_data_ptr<T>(), src, grad_image.mutable_data_ptr<T>(), walk,
                     progs, reduced, photometric_grad_scale<P>(stddev));
    });
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(photometric_loops, cpu, &photometric);
GPUAUG_REGISTER_LOOP(photometric_backward_loops, cpu, &photometric_backward);

}  // namespace gpuaug::cpu
