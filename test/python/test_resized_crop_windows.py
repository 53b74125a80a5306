"""gpuaug::_resized_crop_windows, RandomResizedCrop's draw in one kernel, against the torch ops
that computed it before (geometric_testing.resized_crop_windows_reference): bit for bit with a
correctly rounded float32 exp, as the kernels compute it, and within exp's ulp of torch.exp."""

import pytest
import torch

from gpuaug import transforms as T
from gpuaug_testing import DEVICES, requires_cuda
from geometric_testing import resized_crop_windows_reference

op = torch.ops.gpuaug._resized_crop_windows

DEFAULT = ((0.08, 1.0), (3 / 4, 4 / 3))
SETTINGS = [DEFAULT, ((0.9, 1.0), (0.5, 0.6)), ((0.9, 1.0), (2.0, 3.0)),
            ((1.5, 2.0), (3 / 4, 4 / 3)),  # no try fits: the fallback
            ((0.01, 0.3), (4 / 3, 3 / 4))]  # a reversed range (torchvision warns, draws)
SIZES = [(224, 224), (20, 24), (1, 1), (2, 3), (3, 1000), (1000, 3), (375, 500)]


def correctly_rounded_exp(x):
    return torch.exp(x.double()).float()


def windows(u, height, width, scale, ratio):
    """The op's [4, S] rows as [S, 4] on the CPU, a side an int or a tensor of one a sample."""
    def shared(value):
        return 0 if isinstance(value, torch.Tensor) else value

    def per_sample(value):
        return value.to(u.device) if isinstance(value, torch.Tensor) else None
    return op(u, shared(height), shared(width), per_sample(height), per_sample(width),
              list(scale), list(ratio)).t().cpu()


def uniforms(samples, seed, device="cpu"):
    return torch.rand([samples, 22], generator=torch.Generator().manual_seed(seed)).to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale, ratio", SETTINGS)
def test_matches_reference(device, scale, ratio):
    """Every size, tiny (the fallback), wide and narrow among them, one for all samples and one
    a sample, bit for bit where exp rounds alike."""
    u = uniforms(6000, 1, device)
    for seed, (height, width) in enumerate(SIZES):
        got = windows(u, height, width, scale, ratio)
        expected = resized_crop_windows_reference(u.cpu(), height, width, scale, ratio,
                                                  exp=correctly_rounded_exp)
        assert torch.equal(got, expected), (height, width)
        # torch.exp is within an ulp of the rounded exp (about 1% of values differ): a side
        # that close to a half rounds the other way once in a few million windows
        near = resized_crop_windows_reference(u.cpu(), height, width, scale, ratio)
        assert (got != near).any(1).sum() <= 1, (height, width)
    heights = torch.tensor([h for h, _ in SIZES] * 1000)[:6000]
    widths = torch.tensor([w for _, w in SIZES] * 1000)[:6000]
    assert torch.equal(windows(u, heights, widths, scale, ratio),
                       resized_crop_windows_reference(u.cpu(), heights, widths, scale, ratio,
                                                      exp=correctly_rounded_exp))


@pytest.mark.parametrize("device", DEVICES)
def test_fallback_and_windows_inside(device):
    """Windows lie inside their images; where no try can fit, torchvision's centred fallback."""
    u = uniforms(1000, 2, device)
    got = windows(u, 20, 60, (1.5, 2.0), (0.5, 0.6))  # wider than 0.6: height 20, width 12
    assert got.unique(dim=0).tolist() == [[0, 24, 20, 12]]
    got = windows(u, 60, 20, (1.5, 2.0), (2.0, 3.0))  # narrower than 2: width 20, height 10
    assert got.unique(dim=0).tolist() == [[25, 0, 10, 20]]
    top, left, height, width = windows(u, 20, 24, *DEFAULT).t()
    assert (top >= 0).all() and (left >= 0).all() and (height > 0).all() and (width > 0).all()
    assert (top + height <= 20).all() and (left + width <= 24).all()


@pytest.mark.parametrize("device", DEVICES)
def test_ties_round_half_to_even(device):
    """Sides of exactly k + 1/2 (ratio 1, a fixed scale) round as torch.round: to even."""
    u = uniforms(50, 8, device)
    for scale, side in [(25 / 256, 2), (49 / 256, 4)]:  # sqrt(64 s) = 2.5, 3.5, exactly
        _, _, height, width = windows(u, 8, 8, (scale, scale), (1.0, 1.0)).t()
        assert (height == side).all() and (width == side).all()


@pytest.mark.parametrize("device", DEVICES)
def test_strided_uniforms_and_sides(device):
    """Uniforms and per-sample sides with any strides; an int side where the other is a tensor."""
    u = uniforms(300, 3, device).t().contiguous().t()  # column-major
    heights = torch.full([600], 30, device=device)[::2]
    expected = resized_crop_windows_reference(u.cpu(), 30, 40, *DEFAULT,
                                              exp=correctly_rounded_exp)
    assert torch.equal(op(u, 0, 40, heights, None, *DEFAULT).t().cpu(), expected)
    assert torch.equal(op(u, 30, 0, None, heights + 10, *DEFAULT).t().cpu(), expected)
    assert torch.equal(op(u, 7, 9, heights, heights + 10, *DEFAULT).t().cpu(), expected)


@requires_cuda
def test_cuda_equals_cpu():
    u = uniforms(50000, 4)
    for scale, ratio in SETTINGS:
        assert torch.equal(windows(u.cuda(), 375, 500, scale, ratio),
                           windows(u, 375, 500, scale, ratio))


@pytest.mark.parametrize("device", DEVICES)
def test_no_samples(device):
    out = op(torch.empty([0, 22], device=device), 5, 6, None, None, *DEFAULT)
    assert out.shape == (4, 0) and out.dtype == torch.int64 and out.device.type == device


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(device, requires_grad):
    u = uniforms(37, 5, device).requires_grad_(requires_grad)
    torch.library.opcheck(op.default, (u, 20, 24, None, None, *DEFAULT))
    torch.library.opcheck(op.default, (u, 0, 9, torch.arange(37, device=device) + 1, None,
                                       [0.5, 1.0], [0.5, 2.0]))


def test_no_gradient():
    out = op(uniforms(3, 6).requires_grad_(), 5, 6, None, None, *DEFAULT)
    assert out.grad_fn is None and not out.requires_grad


def test_schema():
    assert str(op.default._schema) == (
        "gpuaug::_resized_crop_windows(Tensor uniforms, SymInt height, SymInt width, "
        "Tensor? heights, Tensor? widths, float[2] scale, float[2] ratio) -> Tensor")


def call(uniforms=None, heights=None, widths=None, scale=DEFAULT[0], ratio=DEFAULT[1]):
    uniforms = torch.rand(3, 22) if uniforms is None else uniforms
    return lambda: op(uniforms, 5, 6, heights, widths, scale, ratio)


LONG = torch.long
BAD = [
    ("uniforms float64", call(torch.rand(3, 22, dtype=torch.float64)),
     "'uniforms' of dtype float32, but got Double"),
    ("uniforms 21 columns", call(torch.rand(3, 21)),
     r"'uniforms' of shape \[S, 22\] .* but got \[3, 21\]"),
    ("uniforms 1-d", call(torch.rand(22)), r"'uniforms' of shape \[S, 22\] .* but got \[22\]"),
    ("heights int32", call(heights=torch.ones(3, dtype=torch.int32)),
     r"'heights' as int64 of shape \[3\] \(one a sample of 'uniforms'\), but got Int of shape"),
    ("widths of another count", call(widths=torch.ones(4, dtype=LONG)),
     r"'widths' as int64 of shape \[3\] .* but got Long of shape \[4\]"),
    ("widths 0-d", call(widths=torch.tensor(4)),
     r"'widths' as int64 of shape \[3\] .* but got Long of shape \[\]"),
    ("heights on another device", call(heights=torch.ones(3, dtype=LONG, device="meta")),
     "'heights' on cpu like 'uniforms', but got meta"),
    ("scale of 3", call(scale=[0.1, 0.5, 1.0]), "'scale' as 2 values"),
    ("ratio of 0", call(ratio=[0.0, 1.0]), r"positive 'ratio' values .* but got \[0, 1\]"),
]


@pytest.mark.parametrize("name, call, message", BAD, ids=[b[0] for b in BAD])
def test_bad_inputs(name, call, message):
    with pytest.raises(RuntimeError, match="gpuaug::_resized_crop_windows: expected " + message):
        call()


@requires_cuda
def test_cpu_uniforms_with_cuda_sides():
    with pytest.raises(RuntimeError, match="'heights' on cpu like 'uniforms', but got cuda"):
        op(torch.rand(3, 22), 0, 6, torch.ones(3, dtype=torch.long, device="cuda"), None,
           *DEFAULT)


def test_compile_fullgraph():
    """sample_params in one graph, its draw the op (Dynamo's eager backend)."""
    from torch._dynamo.testing import CompileCounter
    transform = T.RandomResizedCrop(8)
    images = torch.zeros([4, 3, 20, 24], dtype=torch.uint8)
    counter = CompileCounter()
    compiled = torch.compile(transform.sample_params, backend=counter, fullgraph=True)
    torch.manual_seed(7)
    got = compiled(images)
    torch.manual_seed(7)
    assert all(torch.equal(got[k], v) for k, v in transform.sample_params(images).items())
    assert counter.frame_count == 1


@pytest.mark.parametrize("device", DEVICES)
def test_sample_params_one_kernel(device):
    """The draw dispatches the uniforms, the op and its rows (sides alike for all: ints)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorded(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            calls.append(func.__name__)
            return func(*args, **(kwargs or {}))

    transform, calls = T.RandomResizedCrop(8), []
    images = torch.zeros([4, 3, 20, 24], device=device)
    with Recorded():
        transform.sample_params(images)
    assert calls == ["rand.default", "_resized_crop_windows.default", "unbind.int"]


@requires_cuda
def test_sample_params_capture_in_a_cuda_graph():
    """No host sync: the draw captures, and each replay draws anew."""
    transform = T.RandomResizedCrop(8)
    images = torch.zeros([64, 3, 20, 24], device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        transform.sample_params(images)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        params = transform.sample_params(images)
    graph.replay()
    first = {k: v.clone() for k, v in params.items()}
    graph.replay()
    torch.cuda.synchronize()
    assert not all(torch.equal(first[k], params[k]) for k in params)
    assert (params["top"] + params["height"] <= 20).all()
    assert (params["left"] + params["width"] <= 24).all()
