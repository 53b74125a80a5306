// gpuaug::photometric's CPU loop: a reduction pass for contrast's grayscale mean (when the
// program has a contrast stage), then one pass that runs each pixel through its sample's program.
#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "kernels/photometric.h"
#include "kernels/photometric_math.h"

namespace gpuaug::cpu {
namespace {

using namespace gpuaug::photo;

// Fixed runs of pixels of one image, so that the means' partial sums do not depend on the number
// of threads.
constexpr int64_t kPixelsPerTask = 4096;

struct Walk {
  ColorGeometry g;
  int64_t tasks_per_image;
  int64_t channel_step, pixel_step;

  explicit Walk(const ColorGeometry& geometry)
      : g(geometry),
        tasks_per_image((geometry.pixels + kPixelsPerTask - 1) / kPixelsPerTask),
        channel_step(geometry.interleaved ? 1 : geometry.pixels),
        pixel_step(geometry.interleaved ? geometry.channels : 1) {}

  int64_t images() const { return g.samples * g.frames; }
  int64_t tasks() const { return images() * tasks_per_image; }
};

template <int C, typename T, typename P>
void load_pixel(const T* in, int64_t at, const Walk& w, P (&x)[3]) {
  for (int c = 0; c < C; ++c) x[c] = load<P>(in[at + c * w.channel_step]);
}

// Each image's grayscale mean at its sample's contrast step (0 where it has none).
template <int C, typename T, typename P>
std::vector<P> contrast_means(const T* in, const Walk& w, const std::vector<SampleProgram<P>>& progs) {
  std::vector<double> partial(w.tasks(), 0.0);
  at::parallel_for(0, w.tasks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t image = task / w.tasks_per_image;
      const SampleProgram<P>& prog = progs[image / w.g.frames];
      if (prog.contrast_at < 0) continue;
      const int64_t first = (task % w.tasks_per_image) * kPixelsPerTask;
      const int64_t last = std::min(first + kPixelsPerTask, w.g.pixels);
      double sum = 0;
      for (int64_t px = first; px < last; ++px) {
        P x[1][3];
        load_pixel<C>(in, image * C * w.g.pixels + px * w.pixel_step, w, x[0]);
        run_steps<C, T>(prog, 0, prog.contrast_at, x, P(0));
        sum += contrast_gray<C, T>(x[0]);
      }
      partial[task] = sum;
    }
  });
  std::vector<P> means(w.images(), P(0));
  for (int64_t image = 0; image < w.images(); ++image) {
    double sum = 0;
    for (int64_t t = 0; t < w.tasks_per_image; ++t) sum += partial[image * w.tasks_per_image + t];
    means[image] = rounded<T>(static_cast<P>(sum / static_cast<double>(w.g.pixels)));
  }
  return means;
}

template <int C, typename T, typename out_t, typename P>
void transform(const T* in, out_t* out, const Walk& w, const std::vector<SampleProgram<P>>& progs,
               const std::vector<P>& means, const Output<P>& o) {
  at::parallel_for(0, w.tasks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t image = task / w.tasks_per_image;
      const SampleProgram<P>& prog = progs[image / w.g.frames];
      const P mean = means.empty() ? P(0) : means[image];
      const int64_t first = (task % w.tasks_per_image) * kPixelsPerTask;
      const int64_t last = std::min(first + kPixelsPerTask, w.g.pixels);
      for (int64_t px = first; px < last; ++px) {
        const int64_t at = image * C * w.g.pixels + px * w.pixel_step;
        P x[1][3];
        load_pixel<C>(in, at, w, x[0]);
        run_steps<C, T>(prog, 0, prog.count, x, mean);
        for (int c = 0; c < C; ++c) out[at + c * w.channel_step] = convert<T, out_t>(x[0][c], o, c);
      }
    }
  });
}

void photometric(const at::Tensor& out, const at::Tensor& image, const Program& program,
                 const at::Tensor& factors, const at::Tensor& order, const at::Tensor& apply,
                 std::optional<c10::ArrayRef<double>> mean,
                 std::optional<c10::ArrayRef<double>> stddev) {
  const at::Tensor in = color_dense_image(image);
  const Walk walk(color_geometry(in));
  photometric_dispatch(in.scalar_type(), out.scalar_type(), [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using out_t = typename decltype(out_tag)::type;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    std::vector<SampleProgram<P>> progs(walk.g.samples);
    for (int64_t n = 0; n < walk.g.samples; ++n) {
      progs[n] = decode(program, factors.const_data_ptr<P>(),
                        order.defined() ? order.const_data_ptr<int64_t>() : nullptr,
                        apply.defined() ? apply.const_data_ptr<bool>() : nullptr, n);
    }
    const Output<P> o = photometric_output<P>(mean, stddev);
    auto run = [&](auto channels) {
      constexpr int C = decltype(channels)::value;
      const T* src = in.const_data_ptr<T>();
      const std::vector<P> means =
          program.has_contrast ? contrast_means<C, T>(src, walk, progs) : std::vector<P>{};
      transform<C, T>(src, out.mutable_data_ptr<out_t>(), walk, progs, means, o);
    };
    if (walk.g.channels == 3) {
      run(std::integral_constant<int, 3>{});
    } else {
      run(std::integral_constant<int, 1>{});
    }
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(photometric_loops, cpu, &photometric);

}  // namespace gpuaug::cpu
