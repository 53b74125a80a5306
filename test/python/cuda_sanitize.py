"""Runs every CUDA kernel path of every gpuaug op once, on small tensors, and checks the values.

Meant to run under compute-sanitizer (memcheck, initcheck, racecheck, synccheck):
    compute-sanitizer --error-exitcode 1 python test/python/cuda_sanitize.py
Exits 1 on a wrong value, 2 when CUDA is not available (so a GPU job cannot pass silently).
`--device cpu` runs the same checks on the CPU kernels (to try the script without a GPU).
"""
import argparse
import itertools
import sys

import torch

import gpuaug  # noqa: F401  (registers torch.ops.gpuaug)

ops = torch.ops.gpuaug
failures = []


def expect(label, actual, expected, exact=True, atol=1e-2, kinks=0.0):
    """kinks: the fraction of values allowed off, where a gradient jumps (a hue sector's edge, a
    clamp) and the GPU's forward, rounded otherwise, lands on the other side."""
    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    if exact:
        ok = actual.shape == expected.shape and actual.dtype == expected.dtype and bool(
            ((actual == expected) | (actual.isnan() & expected.isnan())).all())
    else:
        ok = actual.shape == expected.shape and (~torch.isclose(
            actual.double(), expected.double(), rtol=1e-2, atol=atol)).sum() <= \
            kinks * expected.numel()
    if not ok:
        failures.append(label)
        print(f"MISMATCH {label}\n  got      {actual.flatten()[:8].tolist()}\n"
              f"  expected {expected.flatten()[:8].tolist()}")
        if actual.shape == expected.shape:  # how many, and the worst
            diff = (actual.double() - expected.double()).abs().nan_to_num(float("inf"))
            worst = int(diff.flatten().argmax())
            off = ~torch.isclose(actual.double(), expected.double(), rtol=1e-2, atol=atol)
            print(f"  {int(off.sum())} of {diff.numel()} off; the worst at {worst}: got "
                  f"{actual.flatten()[worst].item()}, expected {expected.flatten()[worst].item()}")


def rand(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 4
    ties = torch.rand(shape, generator=g) < 0.25
    x = torch.where(ties, torch.floor(x) + 0.5, x)   # exact halves: round_ste's ties
    return x.to(dtype).to(device)


# float64 references rounded once to the dtype (exact for these single operations).
def relu_ref(x):
    return torch.where(x.double() < 0, 0.0, x.double()).to(x.dtype)


def round_ref(x):
    return torch.floor(x.double() + 0.5).to(x.dtype)


def mul_ref(a, b):
    return (a.double() * b.double()).to(a.dtype)


def relu_grad_ref(g, x):
    return torch.where(x.double() > 0, g.double(), 0.0).to(g.dtype)


def check_unary_and_binary(tag, x, y):
    """x, y: same shape and dtype (any layout)."""
    c = lambda t: t.cpu()   # noqa: E731
    expect(f"relu {tag}", ops.relu(x), relu_ref(c(x)))
    expect(f"round_ste {tag}", ops.round_ste(x), round_ref(c(x)))
    expect(f"mul {tag}", ops.mul(x, y), mul_ref(c(x), c(y)))
    expect(f"relu_backward {tag}", ops._relu_backward(y, x), relu_grad_ref(c(y), c(x)))
    ga, gb = ops._mul_backward(y, x, y)
    expect(f"mul_backward[a] {tag}", ga, mul_ref(c(y), c(y)))
    expect(f"mul_backward[b] {tag}", gb, mul_ref(c(y), c(x)))


# Values where floor(x + 0.5) computed naively in the dtype goes wrong, and specials:
# (inputs, round_ste(inputs)); relu of the same inputs is checked against relu_ref.
EDGES = {
    torch.float32: ([0.49999997, 8388609.0, -0.5, 2.5, -2.5, float("nan"), float("inf"), -float("inf")],
                    [0.0, 8388609.0, 0.0, 3.0, -2.0, float("nan"), float("inf"), -float("inf")]),
    torch.float64: ([0.49999999999999994, 4503599627370497.0, -0.5, 2.5, float("nan")],
                    [0.0, 4503599627370497.0, 0.0, 3.0, float("nan")]),
    torch.float16: ([0.49975586, 1023.5, -0.5, 2.5, float("nan")], [0.0, 1024.0, 0.0, 3.0, float("nan")]),
    torch.bfloat16: ([0.49804688, 127.5, -0.5, 2.5, float("nan")], [0.0, 128.0, 0.0, 3.0, float("nan")]),
}


def check_color_transform(device):
    """color_transform's kernels against its CPU kernel: the vectorised path (3 channels, aligned
    planes) planar and interleaved with its shared-memory staged stores, the per-pixel path (odd
    sizes, other channel counts), uint8 in and out, masks, mean/std, CPU parameters, and the
    backward with its block sums and final reduction."""
    def params(n, c, seed):
        g = torch.Generator().manual_seed(seed)
        u = lambda shape, lo, hi: torch.rand(shape, generator=g) * (hi - lo) + lo   # noqa: E731
        return [u((n, c), 0.7, 1.3), u((n,), -0.1, 0.1), u((n,), 0.8, 1.2), u((n,), 0.8, 1.25)]

    cases = [((4, 3, 16, 24), False), ((4, 3, 16, 24), True), ((3, 3, 5, 7), True),
             ((2, 4, 8, 8), False), ((2, 2, 3, 3, 8), False), ((3, 16, 16), False)]
    for i, (shape, interleaved) in enumerate(cases):
        n, c = (1, shape[0]) if len(shape) == 3 else (shape[0], shape[-3])
        x = torch.rand(shape, generator=torch.Generator().manual_seed(40 + i))
        if interleaved:
            x = x.contiguous(memory_format=torch.channels_last)
        p = params(n, c, 50 + i)
        if len(shape) == 3:
            p = [p[0][0], p[1][0], p[2][0], p[3][0]]   # shared: [C] and 0-d, read by value
        apply = (torch.arange(n) % 3 != 1) if len(shape) > 3 else None
        on = lambda t: None if t is None else t.to(device)   # noqa: E731
        # Shared parameters stay on the CPU beside a CUDA image: passed by value.
        p_dev = p if len(shape) == 3 else [on(t) for t in p]
        tag = f"color {list(shape)}{' interleaved' if interleaved else ''}"
        for in_dtype, out_dtype, kwargs in [(torch.float32, None, {}), (torch.float16, None, {}),
                                            (torch.uint8, None, {}),
                                            (torch.uint8, torch.float32,
                                             {"mean": [0.5] * c, "std": [0.25] * c})]:
            xi = (x * 255).round().to(torch.uint8) if in_dtype == torch.uint8 else x.to(in_dtype)
            want = ops.color_transform(xi, *p, apply=apply, dtype=out_dtype, **kwargs)
            got = ops.color_transform(on(xi), *p_dev, apply=on(apply),
                                      dtype=out_dtype, **kwargs)
            expect(f"{tag} {in_dtype}->{out_dtype or in_dtype}", got.float(), want.float(),
                   exact=False)
        grad = torch.randn(shape, generator=torch.Generator().manual_seed(60 + i))
        want = ops._color_transform_backward(grad, x, *p, apply, None)
        got = ops._color_transform_backward(on(grad), on(x), *p_dev, on(apply), None)
        for name, a, b in zip(["image", "color", "brightness", "contrast", "gamma"], got, want):
            expect(f"{tag} grad {name}", a, b, exact=False)


def check_photometric(device):
    """photometric's kernels against its CPU kernel: the vectorised path planar and interleaved,
    the per-element path (odd sizes, one channel, strided), with contrast's reduction,
    autocontrast's, equalize's histograms or none, per-sample order (or keys) and apply (or one
    row), uint8 and float in, converted and normalised out; the backward's kernels for the float
    images."""
    g = torch.Generator().manual_seed(70)
    stages = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    # uint8 planes of 512 pixels read in runs of 8, of 60 pixels in runs of 4; a batch of two
    # images per SM, uint8 with a reduction: each image in shared memory (on Hopper, halves of
    # 1463 and 1462 runs in a cluster of two blocks; 144x160: 1440 runs each, whole warps' runs,
    # which float outputs take in halves, see kRunHalves, and interleaved float32 in pairs,
    # kRunPairs)
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device != "cpu" else 4
    cases = [((4, 3, 16, 32), False), ((4, 3, 16, 32), True), ((4, 3, 6, 10), False),
             ((4, 3, 6, 10), True), ((3, 3, 5, 7), False), ((2, 1, 9, 11), False),
             ((2, 2, 3, 8, 16), False), ((2 * sms, 3, 150, 156), False),
             ((2 * sms, 3, 150, 156), True), ((2 * sms, 3, 144, 160), False),
             ((2 * sms, 3, 144, 160), True)]
    for i, (shape, interleaved) in enumerate(cases):
        n, c = shape[0], shape[-3]
        x = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
        if interleaved:
            x = x.contiguous(memory_format=torch.channels_last)
        factors = torch.rand(n, 9, generator=g) * 0.8 + 0.6
        factors[:, 3] = torch.rand(n, generator=g) - 0.5        # hue
        factors[:, 5] = 128.0                                    # solarize
        factors[:, 6] = 5.0                                      # posterize bits
        factors[:, 8] = 5.0 if c == 3 else 0.0                   # permutation (2, 1, 0) or none
        order = torch.argsort(torch.rand(n, 9, generator=g), dim=1)
        apply = torch.rand(n, 9, generator=g) < 0.7
        if i % 2:  # the order as keys (columns of a wider tensor), one apply row for all
            order, apply = torch.rand(n, 12, generator=g)[:, 2:11], apply[0]
        # color_augment's six slots (its gains, brightness, contrast, gamma) and the stages
        # without a threshold, which would turn a value rounded the other way (below) into a jump
        continuous = [0, 1, 2, 3, 4, 7, 8]
        color = torch.rand(n, 6, generator=g) * torch.tensor([0.6, 0.6, 0.6, 0.2, 0.4, 0.7]) + \
            torch.tensor([0.7, 0.7, 0.7, -0.1, 0.8, 0.7])
        color_order = torch.argsort(torch.rand(n, 13, generator=g), dim=1)
        color_apply = torch.rand(n, 13, generator=g) < 0.7
        if i % 2:
            color_order, color_apply = torch.rand(n, 13, generator=g), color_apply[0]
        for reduction in ("contrast", "autocontrast", "equalize", "none", "color_augment"):
            st = {"contrast": stages, "autocontrast": [1, 10] + stages[2:],
                  "equalize": [1, 11] + stages[2:], "none": [1, 1] + stages[2:],
                  "color_augment": [12] + [13] * 5 + [stages[k] for k in continuous]}[reduction]
            for xi, out_dtype, kwargs in [(x, None, {}),
                                          (x, torch.float32, {"mean": [0.5] * c, "std": [0.25] * c}),
                                          (x.float() / 255, None, {})]:
                f = factors.clone()
                if xi.dtype != torch.uint8:
                    f[:, 5] = 0.5                                # solarize on [0, 1]
                kw = dict(order=order, apply=apply, dtype=out_dtype, **kwargs)
                # color_augment's uint8 results may round the other way on the GPU (its exp2
                # and log2 are the special function unit's), which later factors above 1 widen
                atol = 1e-2
                if reduction == "color_augment":
                    f = torch.cat([color, f[:, continuous]], dim=1)
                    kw.update(order=color_order, apply=color_apply)
                    if xi.dtype == torch.uint8:
                        atol = 4.0 if out_dtype is None else 4.0 / 255 / 0.25
                args = (st, f)
                want = ops.photometric(xi, *args, **kw)
                got = ops.photometric(xi.to(device), st, f.to(device),
                                      **{k: v.to(device) if isinstance(v, torch.Tensor) else v
                                         for k, v in kw.items()})
                tag = f"photometric {list(shape)}{' interleaved' if interleaved else ''} " \
                      f"{xi.dtype}->{out_dtype or xi.dtype} reduction={reduction}"
                expect(tag, got.float(), want.float(), exact=False, atol=atol)
                # the backward's kernels, the mean's gradient pass too (autocontrast and
                # equalize have none)
                if xi.dtype != torch.uint8 and reduction in ("contrast", "none", "color_augment"):
                    grad = torch.randn(xi.shape, generator=g)
                    bw = dict(order=kw["order"], apply=kw["apply"], std=[0.25] * c)
                    want = ops._photometric_backward(grad, xi, st, f, **bw)
                    got = ops._photometric_backward(
                        grad.to(device), xi.to(device), st, f.to(device),
                        **{k: v.to(device) if isinstance(v, torch.Tensor) else v
                           for k, v in bw.items()})
                    expect(tag + " backward", got, want, exact=False)
    strided = torch.randint(0, 256, (2, 3, 8, 32), generator=g, dtype=torch.uint8)[..., ::2]
    factors = torch.full([2, 1], 1.3)
    expect("photometric strided", ops.photometric(strided.to(device), [1], factors.to(device)),
           ops.photometric(strided, [1], factors))
    # planes read in place at strides of their own: a channel slice, a plane expanded to three
    # channels (stride 0) and a plane of a 3-channel batch, by the two-pass kernels and, two
    # images an SM, the resident kernel; contrast (its statistics), equalize (its histograms)
    for n, h, w in [(4, 16, 32), (2 * sms, 144, 160)]:
        wide = torch.randint(0, 256, (n, 4, h, w), generator=g, dtype=torch.uint8)
        wide_here, f = wide.to(device), torch.rand(n, 2, generator=g) + 0.5
        views = [lambda t: t[:, 1:], lambda t: t[:, :1].expand(n, 3, h, w), lambda t: t[:, 2:3]]
        for view, st in itertools.product(views, ([1, 2], [1, 11])):
            for out_dtype in (None, torch.float32):
                expect(f"photometric {list(view(wide).stride())} {st} -> {out_dtype}",
                       ops.photometric(view(wide_here), st, f.to(device), dtype=out_dtype),
                       ops.photometric(view(wide), st, f, dtype=out_dtype))
    # no stages: the conversion alone, and its gradient
    x = torch.randint(0, 256, (3, 3, 7, 16), generator=g, dtype=torch.uint8)
    none, norm = torch.empty(0), {"mean": [0.5] * 3, "std": [0.25] * 3}
    for xi in (x, x.contiguous(memory_format=torch.channels_last)):
        expect("photometric no stages",
               ops.photometric(xi.to(device), [], none.to(device), dtype=torch.float32, **norm),
               ops.photometric(xi, [], none, dtype=torch.float32, **norm), exact=False)
    xf, grad = x.float() / 255, torch.randn(x.shape, generator=g)
    expect("photometric no stages backward",
           ops._photometric_backward(grad.to(device), xf.to(device), [], none.to(device),
                                     std=[0.25] * 3),
           ops._photometric_backward(grad, xf, [], none, std=[0.25] * 3), exact=False)


def check_photometric_ranged(device):
    """Ranged factors (uniforms the kernels map through factor_ranges, a color_augment gamma slot
    through exp, a permutation's through its floor), as a fresh Compose(ColorAugment,
    ColorJitter, RandomChannelPermutation) passes them, with float64 keys, or every other shape
    factor_ranges' long form (factors, coins and order keys from columns of the uniforms): the
    vectorised path planar and interleaved, halves and whole images in shared memory, the
    per-element path, and the backward for a float image."""
    g = torch.Generator().manual_seed(90)
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device != "cpu" else 4
    stages = [12] + [13] * 5 + [1, 2, 3, 4, 9]
    lows = [0.8, 0.8, 0.8, -0.1, 0.8, -0.5, 0.6, 0.6, 0.6, -0.1, 0.0]
    widths = [0.4, 0.4, 0.4, 0.2, 0.4, 1.0, 0.8, 0.8, 0.8, 0.2, 6.0]
    k = len(stages)
    # the long form: slot j's factor from column j, its coin from k + j (applied below 0.8), its
    # key from 2k + j, offset by its transform's index
    drawn = lows + widths + [float(c) for c in range(2 * k)] + [0.8] * k + \
        [float(c) for c in range(2 * k, 3 * k)] + [0.0] * 6 + [1.0] * 4 + [2.0] + [1.0] * k
    for i, (shape, interleaved) in enumerate([
            ((4, 3, 16, 32), False), ((4, 3, 16, 32), True), ((3, 3, 5, 7), False),
            ((2 * sms, 3, 150, 156), False), ((2 * sms, 3, 150, 156), True),
            ((2 * sms, 3, 144, 160), False)]):
        n = shape[0]
        x = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
        if interleaved:
            x = x.contiguous(memory_format=torch.channels_last)
        if i % 2:
            u = torch.rand(n, 3 * k, generator=g)
            kw = dict(factor_ranges=drawn)
        else:
            u = torch.rand(n, k, generator=g)
            keys = torch.rand(n, k, generator=g, dtype=torch.float64) + \
                torch.tensor([0.0] * 6 + [1.0] * 4 + [2.0], dtype=torch.float64)
            apply = torch.rand(n, k, generator=g) < 0.8
            kw = dict(order=keys, apply=apply, factor_ranges=lows + widths)
        tag = (f"photometric {'drawn' if i % 2 else 'ranged'} {list(shape)}"
               f"{' interleaved' if interleaved else ''}")
        # uint8 results may round the other way on the GPU (see check_photometric)
        for xi, out_dtype, kwargs, atol in [
                (x, None, {}, 4.0),
                (x, torch.float32, {"mean": [0.5] * 3, "std": [0.25] * 3}, 4.0 / 255 / 0.25),
                (x.float() / 255, None, {}, 1e-2)]:
            want = ops.photometric(xi, stages, u, dtype=out_dtype, **kw, **kwargs)
            got = ops.photometric(xi.to(device), stages, u.to(device), dtype=out_dtype,
                                  **{k: v.to(device) if isinstance(v, torch.Tensor) else v
                                     for k, v in kw.items()}, **kwargs)
            expect(f"{tag} {xi.dtype}->{out_dtype or xi.dtype}", got.float(), want.float(),
                   exact=False, atol=atol)
        xf, grad = x.float() / 255, torch.randn(shape, generator=g)
        want = ops._photometric_backward(grad, xf, stages, u, **kw)
        got = ops._photometric_backward(grad.to(device), xf.to(device), stages, u.to(device),
                                        **{k: v.to(device) if isinstance(v, torch.Tensor) else v
                                           for k, v in kw.items()})
        # channels that tie on the CPU, split by one unit on the GPU (color_augment's power
        # through the special function unit, hue's approximate reciprocal), take the other side
        # of hue's kink: a handful of gradients in millions
        expect(f"{tag} backward", got, want, exact=False, kinks=1e-6)


def check_lltm(device):
    """Forward and backward kernels, partial tiles (B not a multiple of 32, S not of 8) and the
    half types against the same op on the CPU."""
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for b, i, s in ((5, 3, 7), (40, 9, 33)):
            args = [rand(shape, dtype, "cpu", seed) * 0.2 for seed, shape in
                    enumerate([(b, i), (3 * s, s + i), (3 * s,), (b, s), (b, s)])]
            on_device = [a.to(device, copy=True).requires_grad_() for a in args]
            new_h, new_cell = ops.lltm(*on_device)
            expected = ops.lltm(*args)
            expect(f"lltm new_h {dtype} {b}x{s}", new_h, expected[0], exact=False)
            expect(f"lltm new_cell {dtype} {b}x{s}", new_cell, expected[1], exact=False)
            (new_h.float().sum() + new_cell.float().sum()).backward()
            cpu_args = [a.detach().clone().requires_grad_() for a in args]
            sum(o.float().sum() for o in ops.lltm(*cpu_args)).backward()
            for k, (a, c) in enumerate(zip(on_device, cpu_args)):
                expect(f"lltm grad {k} {dtype} {b}x{s}", a.grad, c.grad, exact=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    device = parser.parse_args().device
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("cuda_sanitize: CUDA is not available")
        return 2

    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        d = str(dtype).replace("torch.", "")
        r = lambda shape, seed: rand(shape, dtype, device, seed)   # noqa: E731
        # 16-byte aligned, contiguous: vectorised kernel; 1000 + 13 leaves a partial vector and a
        # partial block.
        check_unary_and_binary(f"{d} aligned", r((1013,), 1), r((1013,), 2))
        # One element in: misaligned, one element per iteration.
        check_unary_and_binary(f"{d} misaligned", r((1014,), 3)[1:], r((1014,), 4)[1:])
        # Strided: transposed and sliced with a step.
        check_unary_and_binary(f"{d} strided", r((37, 29), 5).t(), r((29, 74), 6)[:, ::2])
        # channels_last (dense, permuted): flat kernel on the permuted storage.
        cl = lambda t: t.contiguous(memory_format=torch.channels_last)   # noqa: E731
        check_unary_and_binary(f"{d} channels_last", cl(r((2, 3, 5, 7), 7)), cl(r((2, 3, 5, 7), 8)))
        check_unary_and_binary(f"{d} 0-d", r((), 9), r((), 10))
        check_unary_and_binary(f"{d} empty", r((0, 3), 11), r((0, 3), 12))
        edges, rounded = (torch.tensor(v, dtype=dtype) for v in EDGES[dtype])
        expect(f"round_ste edges {d}", ops.round_ste(edges.to(device)), rounded)
        expect(f"relu edges {d}", ops.relu(edges.to(device)), relu_ref(edges))

        # Broadcasting mul (strided kernel with zero strides) and its reducing backward.
        a, b, g = r((33, 1), 13), r((1, 45), 14), r((33, 45), 15)
        expect(f"mul broadcast {d}", ops.mul(a, b), mul_ref(a.cpu(), b.cpu()))
        s = r((), 16)
        expect(f"mul 0-d operand {d}", ops.mul(g, s), mul_ref(g.cpu(), s.cpu()))
        ga, gb = ops._mul_backward(g, a, b)
        expect(f"mul_backward broadcast[a] {d}", ga,
               mul_ref(g.cpu(), b.cpu()).double().sum(1, keepdim=True).to(dtype), exact=False)
        expect(f"mul_backward broadcast[b] {d}", gb,
               mul_ref(g.cpu(), a.cpu()).double().sum(0, keepdim=True).to(dtype), exact=False)

        # Autograd through all three ops (backward kernels launched by the engine).
        x = r((8, 45), 17).requires_grad_()
        w = r((8, 45), 18)
        ops.round_ste(ops.mul(ops.relu(x), b)).backward(w)
        # x's gradient is w * b (no reduction: one rounding) masked by x > 0.
        expect(f"autograd {d}", x.grad,
               torch.where(x.detach().cpu() > 0, mul_ref(w.cpu(), b.cpu()), torch.zeros((), dtype=dtype)))

    check_color_transform(device)
    check_photometric(device)
    check_photometric_ranged(device)
    check_lltm(device)
    check_augment(device)
    check_resized_crop_windows(device)
    check_auto_augment(device)
    check_auto_augment_backward(device)
    if device.startswith("cuda"):
        check_jit(device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    print(f"cuda_sanitize ({device}): {len(failures)} mismatches")
    return 1 if failures else 0


def check_augment(device):
    """gpuaug::augment against its CPU loop: tiles whose image rows are staged and tiles too
    downscaled for the tables, constant padding's fill, flips, outputs beyond the resized window,
    a reduction's two passes, ColorJitter's runs of four pixels on uint8, a list of images of two
    sizes, gray and channels_last images, and the adjoint."""
    geometry = torch.tensor([[0, 0, 20, 24, 0, 12, 14, 0, 0, 0],      # downscale
                             [-3, -2, 18, 20, 3, 30, 40, 5, 9, 1],    # padded, flipped, upscaled
                             [2, 1, 16, 22, 1, 2, 3, -4, -5, 2],      # 8x down, mostly fill
                             [0, 0, 20, 24, 0, 20, 24, 3, 4, 0]])     # no resize
    jitter = dict(stages=[1, 2, 3, 4], factors=torch.tensor([
        [1.2, 0.8, 1.1, 0.05], [0.7, 1.3, 0.6, -0.2], [1.0, 1.1, 1.4, 0.4], [1.3, 0.9, 0.8, -0.1]]))
    g = torch.Generator().manual_seed(50)
    u8 = torch.randint(0, 256, (4, 3, 20, 24), generator=g, dtype=torch.uint8)
    f32 = torch.rand((4, 3, 20, 24), generator=g)
    # (uint8 through the program nearest: a resized value one off, which CPU and GPU may round
    # apart as torch's own do, would come out of the jitter several off)
    cases = [("u8 jitter", [u8], dict(jitter, interpolation=0),
              dict(dtype=torch.float32, mean=[0.5] * 3, std=[0.2] * 3)),
             ("u8 list", [u8[0], u8[1, :, 2:, 3:], u8[2:]], dict(padding_mode=0, fill=[9.0]), {}),
             ("f32 bicubic", [f32], dict(interpolation=2, antialias=False, padding_mode=2), {}),
             ("f32 gray contrast", [f32[:, :1]],
              dict(stages=[2], factors=torch.rand((4, 1), generator=g) + 0.5), {}),
             ("f32 channels_last", [f32.contiguous(memory_format=torch.channels_last)],
              dict(padding_mode=3, stages=[5, 8], factors=torch.ones((4, 2))), {})]
    for label, images, kwargs, output in cases:
        def run(on):
            moved = {k: (v.to(on) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
            return ops.augment([i.to(on) for i in images], geometry.to(on), [12, 14], **moved,
                               **output)
        expect(f"augment {label}", run(device), run("cpu"), exact=False, atol=1.5 if
               output.get("dtype") is None and images[0].dtype == torch.uint8 else 1e-4)
    grads = []
    grad_out = torch.rand((4, 3, 12, 14), generator=g) - 0.5
    for on in (device, "cpu"):
        image = f32.to(on).requires_grad_()
        brightness = jitter["factors"][:, :1].to(on)
        out = ops.augment([image], geometry.to(on), [12, 14], stages=[1], factors=brightness)
        out.backward(grad_out.to(on))
        grads.append(image.grad)
    expect("augment backward", grads[0], grads[1], exact=False, atol=1e-4)
    check_augment_warp(device, g)


def check_auto_augment(device):
    """gpuaug::auto_augment against its CPU loop: chains with taps after taps (bilinear warps,
    sharpness: stage images) and reductions after them, AugMix's mixture, 1 and 3 channels, a channels_last
    image, uint8 to normalised float32."""
    g = torch.Generator().manual_seed(60)
    u8 = torch.randint(0, 256, (4, 3, 13, 18), generator=g, dtype=torch.uint8)
    # (no Posterize after a bilinear warp: the devices' grid_sample round apart by an ulp, which
    # a posterize level can turn into a step)
    operations = torch.tensor([[[5, 12, 9]], [[9, 8, 1]], [[13, 9, 3]], [[7, 2, 6]]])
    magnitudes = torch.tensor([[[25.0, 0.0, 0.4]], [[-0.3, 0.5, 0.2]], [[0.0, 0.7, -5.0]],
                               [[0.4, -0.25, 5.0]]], dtype=torch.float64)
    cases = [("u8 bilinear", u8, operations, magnitudes, dict(interpolation=1)),
             ("u8 to f32 nearest", u8.contiguous(memory_format=torch.channels_last), operations,
              magnitudes, dict(dtype=torch.float32, mean=[0.5] * 3, std=[0.2] * 3)),
             ("f32 gray", u8[:, :1].float() / 255, operations, magnitudes, dict(fill=[0.3])),
             ("f32 mixture", u8.float() / 255, operations.expand(4, 2, 3).contiguous(),
              magnitudes.expand(4, 2, 3).contiguous(),
              dict(interpolation=1, weights=torch.tensor([[0.2, 0.5, 0.3]] * 4)))]
    for label, image, ops_, mags, kwargs in cases:
        def run(on):
            moved = {k: (v.to(on) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
            return ops.auto_augment(image.to(on), ops_.to(on), mags.to(on), **moved)
        expect(f"auto_augment {label}", run(device), run("cpu"), exact=False,
               atol=1.5 if image.dtype == torch.uint8 and "dtype" not in kwargs else 1e-4)


def check_auto_augment_backward(device):
    """gpuaug::_auto_augment_backward against its CPU loop: every operation in chains of three
    (warps bilinear and with fill, sharpness, the reductions), AugMix's mixture and std."""
    g = torch.Generator().manual_seed(61)
    image = torch.rand(5, 3, 13, 18, generator=g, dtype=torch.float64)
    operations = torch.arange(15).view(5, 1, 3).expand(5, 2, 3).flip(1).contiguous()
    magnitudes = (torch.rand(5, 2, 3, generator=g, dtype=torch.float64) - 0.5) * 0.8
    magnitudes[operations == 5] *= 50  # Rotate: degrees
    magnitudes[operations == 3] *= 20  # TranslateX: pixels
    weights = torch.tensor([[0.2, 0.5, 0.3]] * 5)
    grad = torch.randn(image.shape, generator=g, dtype=torch.float64)

    def run(on):
        return torch.ops.gpuaug._auto_augment_backward(
            grad.to(on), image.to(on), operations.to(on), magnitudes.to(on),
            weights=weights.to(on), interpolation=1, fill=[0.3, 0.2, 0.1], std=[0.2] * 3)
    expect("auto_augment backward", run(device), run("cpu"), exact=False, atol=1e-9)


def check_resized_crop_windows(device):
    """RandomResizedCrop's draw against the CPU kernel: 300 samples (a partial block), sides
    shared and per sample, uniforms strided."""
    u = torch.rand([22, 300], generator=torch.Generator().manual_seed(40)).t()
    heights = torch.arange(300) % 50 + 1
    widths = torch.arange(300) % 37 * 9 + 1
    for label, h, w, hs, ws in [("shared", 20, 1000, None, None),
                                ("per sample", 0, 0, heights, widths)]:
        expected = ops._resized_crop_windows(u, h, w, hs, ws, [0.08, 1.0], [0.75, 4 / 3])
        got = ops._resized_crop_windows(u.to(device), h, w, hs if hs is None else hs.to(device),
                                        ws if ws is None else ws.to(device), [0.08, 1.0],
                                        [0.75, 4 / 3])
        expect(f"resized_crop_windows {label}", got, expected)


def check_augment_warp(device, g):
    """The warped tiles (affine, perspective, none) with the fill's mask, the program after them,
    and their adjoint, against the CPU loop (within a unit: CPU and CUDA unnormalise the grid in
    torch's two formulas, which may round a position apart)."""
    geometry = torch.tensor([[0, 0, 20, 24, 0, 20, 24, 3, 4, 0],
                             [-2, -1, 20, 24, 1, 20, 24, 0, 0, 2],
                             [1, 2, 18, 20, 0, 18, 20, 2, 2, 1],
                             [0, 0, 20, 24, 3, 20, 24, 4, 5, 0]])
    warp = torch.tensor([[0.96, -0.28, 2.0, 0.28, 0.96, -1.0, 0, 0, 1],
                         [1.05, 0.02, -0.5, 0.01, 0.97, 0.3, 0.001, -0.002, 2],
                         [0, 0, 0, 0, 0, 0, 0, 0, 0],
                         [0.9, 0.1, 0.0, -0.1, 0.9, 0.0, 0, 0, 1]], dtype=torch.float64)
    u8 = torch.randint(0, 256, (4, 3, 20, 24), generator=g, dtype=torch.uint8)
    f32 = torch.rand((4, 3, 20, 24), generator=g)
    for label, image, kwargs in [("u8 bilinear fill", u8, dict(fill=[5.0, 6.0, 7.0])),
                                 ("f32 bilinear jitter", f32,
                                  dict(stages=[1, 3], factors=torch.tensor([[1.2, 0.8]] * 4)))]:
        def run(on):
            moved = {k: (v.to(on) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
            return ops.augment([image.to(on)], geometry.to(on), [12, 14], interpolation=1,
                               warp=warp.to(on), **moved)
        expect(f"augment warp {label}", run(device), run("cpu"), exact=False,
               atol=1.5 if image.dtype == torch.uint8 else 1e-3)
    grads = []
    grad_out = torch.rand((4, 3, 12, 14), generator=g) - 0.5
    for on in (device, "cpu"):
        image = f32.to(on).requires_grad_()
        ops.augment([image], geometry.to(on), [12, 14], interpolation=1,
                    warp=warp.to(on)).backward(grad_out.to(on))
        grads.append(image.grad)
    expect("augment warp backward", grads[0], grads[1], exact=False, atol=1e-3)


def check_jit(device):
    """Run-time compiled kernels (CUDA only): every layout variant, and the backward's
    two-output kernel with its broadcast reductions."""
    fma = gpuaug.jit.elementwise("sanitize_fma", "x * y + y", inputs=("x", "y"),
                                 grads=("grad * y", "grad * (x + 1)"))
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        r = lambda shape, seed: rand(shape, dtype, device, seed)   # noqa: E731
        ref = lambda x, y: (x.cpu().double() * y.cpu().double() + y.cpu().double()).to(dtype)  # noqa: E731
        x, y = r((1030,), 40), r((1030,), 41)
        for label, a, b in [("vectorized", x, y), ("unaligned", x[1:], y[1:]),
                            ("strided", x[::3][:300], y[1::3][:300]), ("broadcast", r((9, 1), 42), r((1, 13), 43))]:
            expect(f"jit {label} {dtype}", fma(a, b), ref(a, b), exact=False)
        a = r((9, 1), 44).requires_grad_()
        b = r((1, 13), 45).requires_grad_()
        fma(a, b).sum().backward()
        expect(f"jit backward[x] {dtype}", a.grad, (b.detach().cpu().double().sum() * torch.ones(9, 1)).to(dtype), exact=False)


if __name__ == "__main__":
    sys.exit(main())
