"""gpuaug::photometric and the photometric transforms under torch.library.opcheck, torch.export,
torch.compile, TorchScript and CUDA graph capture."""

import pytest
import torch

from gpuaug import Stage
from gpuaug import transforms as T
from gpuaug_testing import (DEVICES, assert_exported_draws, captured_replays, make_image,
                            requires_cuda)
from photometric_testing import (COLOR_AUGMENT, DRAWN_STAGES, DRAWN_TERMS, every_transform)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_drawn(device):
    image = make_image([3, 3, 5, 4], torch.float32, device, seed=36)
    torch.library.opcheck(torch.ops.gpuaug.photometric.default,
                          (image, DRAWN_STAGES, torch.rand([3, 9], device=device)),
                          {"factor_ranges": [v for row in DRAWN_TERMS for v in row]})


def opcheck_args(device):
    image = make_image([2, 3, 5, 7], torch.uint8, device, seed=8)
    params = T.ColorJitter(0.4, 0.4, 0.4, 0.1).sample_params(image)
    return (image, [1, 2, 3, 4], params["factors"]), {
        "order": params["order"], "apply": params["apply"], "dtype": torch.float32,
        "mean": [0.5, 0.5, 0.5], "std": [0.2, 0.2, 0.2]}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("keys", [False, True])
def test_opcheck(keys, device):
    args, kwargs = opcheck_args(device)
    if keys:  # the order as floating keys, one apply row for every sample, uniforms in ranges
        kwargs["order"], kwargs["apply"] = torch.rand_like(args[2]), kwargs["apply"][0]
        args = (args[0], args[1], torch.rand_like(args[2]))
        kwargs["factor_ranges"] = [0.6, 0.6, 0.6, -0.1, 0.8, 0.8, 0.8, 0.2]
    torch.library.opcheck(torch.ops.gpuaug.photometric.default, args, kwargs,
                          test_utils=("test_schema", "test_faketensor",
                                      "test_aot_dispatch_static", "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_no_stages(device):
    """An empty program (the conversion alone), floating in and out so its gradient is checked."""
    image = make_image([2, 3, 5, 4], torch.float32, device, seed=20)
    torch.library.opcheck(torch.ops.gpuaug.photometric.default,
                          (image, [], torch.empty(2, 0, device=device)),
                          {"mean": [0.5] * 3, "std": [0.2] * 3})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("stage", [Stage.AUTOCONTRAST, Stage.EQUALIZE])
def test_opcheck_other_reductions(stage, device):
    """The reduction passes other than contrast's: autocontrast's and equalize's histograms."""
    image = make_image([3, 3, 6, 5], torch.uint8, device, seed=int(stage))
    args = (image, [Stage.BRIGHTNESS, stage], torch.tensor([1.2, 0.0], device=device))
    torch.library.opcheck(torch.ops.gpuaug.photometric.default, args,
                          {"order": torch.tensor([[1, 0], [0, 1], [1, 0]], device=device)},
                          test_utils=("test_schema", "test_faketensor",
                                      "test_aot_dispatch_static", "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_color_augment(device):
    """The color_augment stage on a floating image, its gradient (autograd registration)
    included, per-sample factors and orders."""
    image = make_image([3, 3, 6, 5], torch.float32, device, seed=58).requires_grad_()
    stages = COLOR_AUGMENT + [Stage.SATURATION]
    factors = torch.tensor([1.1, 0.9, 1.2, 0.05, 1.1, 0.8, 1.3], device=device).repeat(3, 1)
    order = torch.tensor([[0, 1, 2, 3, 4, 5, 6], [6, 0, 1, 2, 3, 4, 5], [3, 6, 0, 1, 2, 4, 5]],
                         device=device)
    torch.library.opcheck(torch.ops.gpuaug.photometric.default, (image, stages, factors),
                          {"order": order, "mean": [0.5] * 3, "std": [0.2] * 3})


@pytest.mark.parametrize("device", DEVICES)
def test_export_dynamic_batch(device):
    """torch.export of ColorJitter + Normalize replaying given parameters, with a dynamic batch."""
    jitter = T.ColorJitter(0.4, 0.4, 0.4, 0.1, dtype=torch.float32, mean=[0.5] * 3,
                           std=[0.25] * 3)

    class Replay(torch.nn.Module):
        def forward(self, image, factors, order, apply):
            return jitter(image, {"factors": factors, "order": order, "apply": apply})

    image = make_image([4, 3, 9, 11], torch.uint8, device, seed=40)
    batch = torch.export.Dim("batch", min=2)
    params = jitter.sample_params(image)
    program = torch.export.export(
        Replay(), (image, params["factors"], params["order"], params["apply"]),
        dynamic_shapes=({0: batch}, {0: batch}, {0: batch}, {0: batch}))
    assert torch.ops.gpuaug.photometric.default in {n.target for n in program.graph.nodes}
    for n in (4, 7):
        image = make_image([n, 3, 9, 11], torch.uint8, device, seed=41 + n)
        params = jitter.sample_params(image)
        assert torch.equal(program.module()(image, params["factors"], params["order"],
                                            params["apply"]), jitter(image, params))


@pytest.mark.parametrize("device", DEVICES)
def test_compile_dynamic_batch(device, fresh_dynamo):
    # two calls of the op: contrast's reduction, then equalize's histograms
    transform = T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(),
                           T.RandomEqualize(0.7)],
                          dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3)

    def run(image, params):
        return transform(image, params)

    compiled = torch.compile(run, fullgraph=True, dynamic=True)
    for n in (3, 5, 8):
        image = make_image([n, 3, 12, 10], torch.uint8, device, seed=n)
        params = transform.sample_params(image)
        torch.testing.assert_close(compiled(image, params), run(image, params), rtol=0, atol=0)


def fresh_draw_transforms():
    return {"RandomPhotometricDistort": T.RandomPhotometricDistort(),
            "ColorJitter": T.ColorJitter(0.4, 0.0, 0.4, 0.1),
            "Compose": T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomInvert(),
                                  T.RandomAutocontrast()]),
            "ColorAugment": T.Compose([T.ColorAugment(), T.ColorJitter(0.4, 0.0, 0.4, 0.1)]),
            "RandomApply": T.Compose([T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                                      T.RandomGrayscale(0.2)]),
            "RandomApply, own coins": T.Compose([
                T.RandomInvert(0.3), T.RandomApply([T.RandomPhotometricDistort(),
                                                    T.RandomGrayscale(0.5)], p=0.7)]),
            "RandomApply, reductions": T.RandomApply([T.ColorJitter(0.4, 0.4),
                                                      T.RandomEqualize(0.5)], p=0.7),
            "RandomChoice": T.Compose([T.RandomChoice([T.ColorJitter(0.4, 0.4, 0.2, 0.1),
                                                       T.RandomSolarize(100.0, 0.5),
                                                       T.RandomEqualize()], p=[2, 1, 1])]),
            "RandomOrder": T.Compose([T.RandomInvert(0.3), T.RandomOrder([
                T.ColorJitter(0.4, 0.4, 0.2, 0.1), T.RandomGrayscale(0.5),
                T.RandomPosterize(3)])]),
            "nested containers": T.Compose([
                T.RandomApply([T.RandomChoice([T.ColorJitter(0.4, 0.4, 0.2, 0.1),
                                               T.RandomOrder([T.RandomInvert(0.5),
                                                              T.RandomGrayscale(0.5)])])], p=0.8),
                T.Compose([T.RandomSolarize(100.0, 0.5), T.RandomEqualize(0.5)])])}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(fresh_draw_transforms()))
def test_compile_draws_inside(name, device, fresh_dynamo):
    transform = fresh_draw_transforms()[name]
    compiled = torch.compile(transform, fullgraph=True)
    out = compiled(make_image([4, 3, 8, 8], torch.uint8, device, seed=9))
    assert out.shape == (4, 3, 8, 8) and out.dtype == torch.uint8


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(fresh_draw_transforms()))
def test_export_draws_inside(name, device):
    """torch.export of a transform drawing fresh parameters (torch.rand, then the op, given the
    uniforms' factor_ranges where the transform has them): the same draws and values as eager
    for the same generator state, at another batch size too."""
    program = assert_exported_draws(fresh_draw_transforms()[name], device, seed=45)
    assert torch.ops.gpuaug.photometric.default in {n.target for n in program.graph.nodes}


@requires_cuda
@pytest.mark.parametrize("name", list(fresh_draw_transforms()))
def test_cuda_graph_fresh_draws(name):
    """forward's own draws captured with it: each replay draws anew."""
    transform = fresh_draw_transforms()[name]
    image = make_image([8, 3, 16, 16], torch.uint8, "cuda", seed=19)
    outputs = captured_replays(lambda: transform(image))
    assert not torch.equal(outputs[0], outputs[1])


@pytest.mark.parametrize("name", ["ColorJitter", "RandomPhotometricDistort", "Compose",
                                  "RandomChannelPermutation", "RandomSolarize", "RandomEqualize",
                                  "ColorAugment", "RandomApply", "RandomApply, own coins",
                                  "RandomChoice", "RandomOrder", "nested containers",
                                  "self-supervised Compose"])
def test_torchscript(name, tmp_path):
    transform = every_transform(torch.uint8)[name]
    scripted = torch.jit.script(transform)
    path = tmp_path / "t.pt"
    scripted.save(str(path))
    loaded = torch.jit.load(str(path))
    image = make_image([3, 3, 8, 8], torch.uint8, "cpu", seed=10)
    params = transform.sample_params(image)
    assert torch.equal(loaded(image, params), transform(image, params))
    assert loaded(image).shape == image.shape


@requires_cuda
def test_cuda_graph():
    """Draws and transform captured together: each replay draws anew, as eager would."""
    transform = T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomPhotometricDistort()][:1],
                          dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3)
    image = make_image([8, 3, 32, 32], torch.uint8, "cuda", seed=12)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        params = transform.sample_params(image)
        transform(image, params)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        params = transform.sample_params(image)
        out = transform(image, params)
    outputs = []
    for _ in range(2):
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, transform(image, params))
        outputs.append(out.clone())
    assert not torch.equal(outputs[0], outputs[1])
