"""A/B timing of the photometric op alone between builds of gpuaug, as the history's A/B runs
took it: each case (256x3x224x224, uint8 but for the float cases' values in [0, 1]; draws made
beforehand) a CUDA graph of 20 calls, replayed 15 times, the median per call, and a SHA-1 of its
output's bytes to compare the builds by. The grad_ cases time the image's gradient, forward and
backward in one call, and hash the gradient.
Run each build's package in its own process, alternating, a few rounds (after the build's name,
the cases to run, by the start of their names; all by default):
    for r in 1 2 3; do for v in base new; do PYTHONPATH=ab/$v python3 benchmarks/photometric_ab.py $v; done; done
(ab/<build>/gpuaug: python/gpuaug, the build's _build_info.py and lib/libgpuaug.so)
"""
import hashlib
import sys

import torch

from gpuaug import transforms as T

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
torch.manual_seed(0)
x = torch.randint(0, 256, (256, 3, 224, 224), device="cuda", dtype=torch.uint8)
unit = x.float() / 255
jitter_f32 = dict(dtype=torch.float32, mean=MEAN, std=STD)
cases = {
    "cj_f32": (T.ColorJitter(0.4, 0.4, 0.4, 0.1, **jitter_f32), x),
    "cj_f32_cl": (T.ColorJitter(0.4, 0.4, 0.4, 0.1, **jitter_f32),
                  x.contiguous(memory_format=torch.channels_last)),
    "cj_u8": (T.ColorJitter(0.4, 0.4, 0.4, 0.1), x),
    "distort": (T.RandomPhotometricDistort(p=1.0), x),
    "no_contrast": (T.ColorJitter(0.4, 0, 0.4, 0.1, **jitter_f32), x),
    "no_contrast_cl": (T.ColorJitter(0.4, 0, 0.4, 0.1, **jitter_f32),
                       x.contiguous(memory_format=torch.channels_last)),
    # floating images take the two passes (reduction, then element-wise)
    "cj_float": (T.ColorJitter(0.4, 0.4, 0.4, 0.1), unit),
    "float_cj_norm": (T.ColorJitter(0.4, 0.4, 0.4, 0.1, mean=MEAN, std=STD), unit),
    "float_cj_cl": (T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                    unit.contiguous(memory_format=torch.channels_last)),
    "float_cj_f16": (T.ColorJitter(0.4, 0.4, 0.4, 0.1), unit.half()),
    "float_cj_bf16": (T.ColorJitter(0.4, 0.4, 0.4, 0.1), unit.bfloat16()),
    "float_distort": (T.RandomPhotometricDistort(p=1.0), unit),
    "float_autocontrast": (T.Compose([T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomAutocontrast(1.0),
                                      T.RandomInvert()]), unit),
    "float_equalize": (T.Compose([T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomEqualize(1.0)]), unit),
    "u8_32_cj": (T.ColorJitter(0.4, 0.4, 0.4, 0.1, **jitter_f32), x[:32]),
    "compose5": (T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.2),
                            T.RandomSolarize(128.0), T.RandomInvert(), T.RandomPosterize(4)]), x),
}
# the image's gradient (forward and backward in one call): float32 in [0, 1]
gradient_of = unit.clone().requires_grad_()
output_grad = torch.randn_like(unit)
for name, hue in [("grad_cj", 0.1), ("grad_cj_nohue", 0.0)]:
    cases[name] = (T.ColorJitter(0.4, 0.4, 0.4, hue, mean=MEAN, std=STD), gradient_of)


def call(transform, image, params):
    out = transform(image, params)
    return torch.autograd.grad(out, image, output_grad)[0] if image.requires_grad else out


report = []
chosen = sys.argv[2:]
for name, (transform, image) in cases.items():
    if chosen and not any(name.startswith(prefix) for prefix in chosen):
        continue
    torch.manual_seed(1)
    params = transform.sample_params(image)
    output = call(transform, image, params).contiguous().reshape(-1).view(torch.uint8)
    digest = hashlib.sha1(output.cpu().numpy().tobytes()).hexdigest()[:10]
    side = torch.cuda.Stream()   # warm up off the capture stream, as CUDA graphs ask
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            call(transform, image, params)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(20):
            call(transform, image, params)
    times = []
    for _ in range(15):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 20 * 1000)
    report.append(f"{name} {sorted(times)[7]:.2f} us sha {digest}")
print(sys.argv[1] if len(sys.argv) > 1 else "", " | ".join(report), flush=True)
